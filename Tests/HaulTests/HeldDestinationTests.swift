import Foundation
import HaulTestSupport
import Synchronization
import Testing

@testable import Haul

/// A destination another download holds is told apart by a typed field, never by its message
/// (the queue recognised it by looking for the lock's path in the text).
@Suite("A destination held by another download")
struct HeldDestinationTests {
    @Test func aSecondDownloadToAHeldDestinationSaysItIsHeldElsewhere() async throws {
        // GIVEN a download receiving bytes slowly into a file
        let server = try FaultServer()
        defer { server.stop() }
        server.setResource(FaultHarness.path, body: TestData.bytes(count: 4 << 20, seed: 392))
        server.setPersistentFaults(FaultHarness.path, [.throttle(bytesPerSecond: 1_000_000)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("held.bin")
        let first = Downloader().download(try FaultHarness.request(server, to: .file(destination)))
        let receiving = AsyncSignal()
        let received = Mutex(false)
        let firstEnded = Task {
            try await FaultHarness.watch(first, timeout: 30) { event in
                guard case .progress(let progress) = event, progress.bytes > 0 else { return }
                received.withLock { $0 = true }
                receiving.notify()
            }
        }
        await receiving.wait(seconds: 10) { received.withLock { $0 } }

        // WHEN a second download to the same file starts meanwhile
        let second = Downloader().download(try FaultHarness.request(server, to: .file(destination)))
        var failure: DownloadError?
        do {
            _ = try await second.result()
        } catch {
            failure = error
        }

        // THEN it fails as a destination in the way, held by another download: typed, whatever the text
        #expect(failure?.category == .destinationExists)
        #expect(failure?.heldElsewhere == true, "\(String(describing: failure))")
        first.cancel()
        _ = try await firstEnded.value

        // AND a file in the way (the first one's partial aside, a plain file at the name) is not "held"
        try Data("someone else's".utf8).write(to: URL(fileURLWithPath: directory.file("other.bin")))
        let third = Downloader().download(try FaultHarness.request(server, to: .file(directory.file("other.bin"))))
        var inTheWay: DownloadError?
        do {
            _ = try await third.result()
        } catch {
            inTheWay = error
        }
        #expect(inTheWay?.category == .destinationExists)
        #expect(inTheWay?.heldElsewhere == false)
    }
}
