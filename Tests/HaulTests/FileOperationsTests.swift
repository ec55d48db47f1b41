import Foundation
import HaulCore
import Synchronization
import Testing

@testable import Haul

@Suite("File operations on one download take turns, and at most one waits")
struct FileOperationsTests {
    @Test
    func aSecondCallWaitsItsTurnAndAThirdIsRefusedAtOnce() async throws {
        let operations = FileOperations()
        let order = Mutex<[String]>([])
        let release = Mutex(false)
        // GIVEN a call on download 7 under way (it runs until released)
        let first = Thread {
            _ = try? operations.inTurn(7) { () throws(DownloadError) in
                order.withLock { $0.append("first") }
                while !release.withLock({ $0 }) { usleep(5_000) }
            }
        }
        first.start()
        while order.withLock({ $0 }).isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        // AND a second call on it, waiting
        let second = Thread {
            _ = try? operations.inTurn(7) { () throws(DownloadError) in order.withLock { $0.append("second") } }
        }
        second.start()
        try await Task.sleep(for: .milliseconds(100))
        // WHEN a third call on it comes
        let started = Date()
        var refusal: DownloadError?
        do {
            try operations.inTurn(7) { () throws(DownloadError) in order.withLock { $0.append("third") } }
        } catch {
            refusal = error
        }
        // THEN it is refused at once, saying why
        #expect(Date().timeIntervalSince(started) < 1)
        #expect(refusal?.message.contains("one more waits") == true, "\(String(describing: refusal))")
        // AND a call on another download is not held up
        try operations.inTurn(8) { () throws(DownloadError) in order.withLock { $0.append("other") } }
        // AND once the first ends, the second runs, and a call after them runs too
        release.withLock { $0 = true }
        while order.withLock({ $0.count }) < 3 { try await Task.sleep(for: .milliseconds(5)) }
        try operations.inTurn(7) { () throws(DownloadError) in order.withLock { $0.append("after") } }
        #expect(order.withLock { $0 } == ["first", "other", "second", "after"])
    }
}
