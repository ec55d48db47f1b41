import Foundation
import HaulCore
import HaulStore
import HaulTestSupport
import Testing

@testable import Haul

/// An app that adds its requests at every launch: a request identical to an item already in the
/// queue (queued, paused, running, or completed with its file still there) returns that item.
@Suite("DownloadQueue: adding again at every launch", .serialized)
struct DownloadQueueRelaunchTests {
    @Test func identicalRequestsReturnTheirItemsAtEveryLaunch() async throws {
        // GIVEN a batch of three requests added at a first launch
        let server = try FaultServer()
        defer { server.stop() }
        for index in 0..<3 { server.setResource("/f\(index)", body: TestData.bytes(count: 50_000, seed: UInt64(60 + index))) }
        let directory = try TemporaryDirectory()
        let state = try TemporaryDirectory()
        func batch() throws -> [DownloadRequest] {
            try (0..<3).map { DownloadRequest(url: try #require(URL(string: server.url("/f\($0)"))), destination: .file(directory.file("f\($0)"))) }
        }
        let first = try DownloadQueue(stateDirectory: state.path)
        let ids = try first.add(try batch())

        // WHEN the app is launched again before they ran, and adds them again
        let second = try DownloadQueue(stateDirectory: state.path)
        // THEN it gets the same items, no new ones (it got new ids, each then failing "already exists")
        #expect(try second.add(try batch()) == ids)
        #expect(try second.items().count == 3)

        // WHEN they complete and a third launch adds them again
        let summary = await second.run(QueueRunOptions(maxConcurrent: 2))
        #expect(Set(summary.completed) == Set(ids))
        let third = try DownloadQueue(stateDirectory: state.path)
        // THEN the completed items are returned (it threw destinationExists for the whole batch)
        #expect(try third.add(try batch()) == ids)
        #expect(try third.items().count == 3)
        // AND nothing is fetched again
        let requestsBefore = server.requests.count
        _ = await third.run(QueueRunOptions(maxConcurrent: 2))
        #expect(server.requests.count == requestsBefore)

        // AND a request that asks to replace the file is a new item
        var replacing = try batch()[0]
        replacing.existingFile = .overwrite
        #expect(!ids.contains(try third.add(replacing)))
        // AND while that replacement is unfinished, another request to its file is refused as before
        #expect(throws: DownloadError.self) { try third.add(try batch()[0]) }
        // AND a completed item kept no headers (they were scrubbed), so it is found by URL, place
        // and range alone: the same URL to the same file with another header is still that item
        var other = try batch()[1]
        other.headers.add("X-Other", "1")
        #expect(try third.add(other) == ids[1])
    }
}
