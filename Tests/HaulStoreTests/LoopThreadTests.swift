import Foundation
import HaulCore
import HaulStore
import HaulTestSupport
import Synchronization
import Testing

/// The hunt for blocking calls on the event loop: the loop's thread marks itself, and the store's,
/// the sync's and the record file's calls say they may block; in a debug build one made on the
/// loop is reported (the process stops, unless a test listens).
@Suite("LoopThread: blocking calls on the event loop are caught", .serialized)
struct LoopThreadTests {
    @Test(
        "GIVEN a thread marked as the loop WHEN it reads the SQLite store, saves a record file and syncs a directory THEN each is reported; off the loop THEN none"
    )
    func blockingCallsOnTheLoopAreReported() throws {
        let directory = try TemporaryDirectory(prefix: "haul-loop-thread")
        let store = try QueueStore(directory: directory.path)
        let record = RecordFile(path: directory.file("x.haul-record"))
        let seen = Mutex<[String]>([])
        LoopThread.reportViolations { call in seen.withLock { $0.append(call) } }
        defer { LoopThread.reportViolations(to: nil) }
        let calls: @Sendable () -> Void = {
            _ = try? store.all()
            try? record.save(ResumeRecord(originalURL: "http://127.0.0.1:1/x", finalURL: "http://127.0.0.1:1/x"))
            FileIO.syncDirectory(containing: directory.file("x"))
        }

        Self.onThread(markedAsLoop: false, calls)
        #expect(seen.withLock { $0 }.isEmpty)

        Self.onThread(markedAsLoop: true, calls)
        let reported = seen.withLock { $0 }
        #if DEBUG
            #expect(reported.contains { $0.contains("SQLite store") }, "\(reported)")
            #expect(reported.contains { $0.contains("saving the resume record") }, "\(reported)")
            #expect(reported.contains { $0.contains("a sync of the directory") }, "\(reported)")
        #else
            #expect(reported.isEmpty)
        #endif
    }

    /// Runs `body` on a new thread, marked as an event loop's or not, and waits for it.
    static func onThread(markedAsLoop: Bool, _ body: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            if markedAsLoop { LoopThread.markCurrent() }
            body()
            if markedAsLoop { LoopThread.unmarkCurrent() }
            done.signal()
        }
        thread.start()
        done.wait()
    }
}
