import Foundation
import HaulCore
import HaulStore
import HaulTestSupport
import Testing

@testable import Haul

/// A completion is announced only once it is true: when a queued download's `.completed` event
/// (and the RPC's notification, made from it) goes out, the store already says completed, so a
/// read right after it never sees the download still running, and a process killed right after
/// it does not report the same completion again at the next launch.
@Suite("DownloadQueue: a completion is announced once the store says so", .serialized)
struct QueueCompletionOrderTests {
    @Test func theStoreSaysCompletedWhenTheEventArrives() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let state = try TemporaryDirectory()
        // GIVEN a quick download followed by a slow one, one at a time: the quick one's
        // settlement used to ride on the claim after the slow one's transfer
        server.setResource("/quick", body: TestData.bytes(count: 30_000, seed: 501))
        server.setResource("/slow", body: TestData.bytes(count: 600_000, seed: 502))
        server.setPersistentFaults("/slow", [.throttle(bytesPerSecond: 300_000)])
        let queue = try DownloadQueue(stateDirectory: state.path)
        let ids = try queue.add([
            DownloadRequest(url: try #require(URL(string: server.url("/quick"))), destination: .file(directory.file("quick"))),
            DownloadRequest(url: try #require(URL(string: server.url("/slow"))), destination: .file(directory.file("slow"))),
        ])
        let events = queue.allEvents()
        let seen = Task { () -> [Int64: DownloadState?] in
            var states: [Int64: DownloadState?] = [:]
            for await event in events {
                guard case .completed = event.event else { continue }
                // WHEN a completion arrives, the store is read at once
                states[event.id] = (try? queue.item(event.id))?.state
            }
            return states
        }
        _ = await queue.run(QueueRunOptions(maxConcurrent: 1))
        let states = await seen.value
        // THEN it already says completed (it said running for the quick one: its settlement came 2 s later)
        #expect(states[ids[0]] == .completed, "\(states)")
        #expect(states[ids[1]] == .completed, "\(states)")
    }
}
