import Foundation
import HaulCore
import HaulStore
import HaulTestSupport
import Testing

@testable import Haul

/// A stop (`stopAll`, what SIGINT asks) that comes while the run's workers wait for their claim:
/// what that claim leases is not started, and goes back to the queue.
@Suite("A stop during a claim", .serialized)
struct ClaimAcrossStopTests {
    @Test(
        "GIVEN four items and a run of four workers waiting for a store locked by another process WHEN the run is stopped and the lock let go before the busy timeout THEN no item is downloaded: all are back in the queue and no file is written"
    )
    func itemsClaimedAcrossAStopAreNotStarted() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let state = try TemporaryDirectory()
        for index in 0..<4 { server.setResource("/s\(index)", body: TestData.bytes(count: 50_000, seed: UInt64(900 + index))) }
        let queue = try DownloadQueue(stateDirectory: state.path)
        let ids = try queue.add(
            (0..<4).map { DownloadRequest(url: try #require(URL(string: server.url("/s\($0)"))), destination: .file(directory.file("s\($0)"))) })
        // Another process holds the store's write lock: every claim waits (up to the busy timeout).
        let other = try SQLiteConnection(path: state.file(QueueStore.fileName))
        try other.execute("BEGIN IMMEDIATE")
        let run = Task { await queue.run(QueueRunOptions(maxConcurrent: 4)) }
        try await Task.sleep(for: .milliseconds(600))
        // WHEN the run is stopped while its claim waits, then the lock is let go (well within 5 s)
        queue.stopAll()
        try await Task.sleep(for: .milliseconds(200))
        try other.execute("ROLLBACK")
        let summary = await run.value
        // THEN nothing was claimed to run after the stop
        #expect(summary.completed.isEmpty, "completed after the stop: \(summary.completed)")
        let states = try ids.map { try queue.item($0)?.state }
        #expect(states.allSatisfy { $0 == .queued }, "\(states)")
        #expect((0..<4).allSatisfy { !FileManager.default.fileExists(atPath: directory.file("s\($0)")) })
    }
}
