import Foundation
import HaulCore
import HaulStore
import HaulTestSupport
import Testing

@testable import Haul

@Suite("DownloadQueue: many downloads from a durable store", .serialized)
struct DownloadQueueTests {
    let options = QueueRunOptions(maxConcurrent: 2, retry: RetryPolicy(maxRetries: 2, baseDelay: 0.05, maxDelay: 0.05))

    func request(_ server: FaultServer, _ path: String, into directory: TemporaryDirectory, name: String) throws -> DownloadRequest {
        DownloadRequest(url: try #require(URL(string: server.url(path))), destination: .file(directory.file(name)))
    }

    @Test func runsABatchAndOneFailureDoesNotStopTheOthers() async throws {
        // GIVEN three resources and one missing path
        let server = try FaultServer()
        defer { server.stop() }
        let files = (0..<3).map { TestData.bytes(count: 200_000 + $0 * 1000, seed: UInt64($0 + 1)) }
        for (index, body) in files.enumerated() { server.setResource("/f\(index)", body: body) }
        let directory = try TemporaryDirectory()
        let state = try TemporaryDirectory()
        let queue = try DownloadQueue(stateDirectory: state.path)
        var requests = try (0..<3).map { try request(server, "/f\($0)", into: directory, name: "f\($0)") }
        requests.append(try request(server, "/missing", into: directory, name: "missing"))
        let ids = try queue.add(requests)

        // WHEN the queue runs two at a time
        let summary = await queue.run(options, only: Set(ids))

        // THEN the three files are bit-exact, the missing one failed alone, and the store agrees
        #expect(Set(summary.completed) == Set(ids.prefix(3)))
        #expect(summary.failed.map(\.id) == [ids[3]])
        #expect(summary.failed.first?.error.httpStatus == 404)
        for index in 0..<3 {
            #expect(FileManager.default.contents(atPath: directory.file("f\(index)")).map(Array.init) == files[index])
        }
        let items = try queue.items()
        #expect(items.map(\.state) == [.completed, .completed, .completed, .failed])
        #expect(items[3].errorCategory == "http-status")
        #expect(items[0].bytes == Int64(files[0].count))
    }

    @Test func onlyTheLastFinishedDownloadsKeepTheirEventsInMemory() async throws {
        // GIVEN a queue that keeps the events of the last 2 downloads that ended, and 5 downloads
        let server = try FaultServer()
        defer { server.stop() }
        for index in 0..<5 { server.setResource("/k\(index)", body: TestData.bytes(count: 1_000 + index, seed: UInt64(60 + index))) }
        let directory = try TemporaryDirectory()
        let state = try TemporaryDirectory()
        let queue = try DownloadQueue(stateDirectory: state.path)
        queue.subscribers.setFinishedHubLimit(2)
        let ids = try queue.add(try (0..<5).map { try request(server, "/k\($0)", into: directory, name: "k\($0)") })

        // WHEN they all run, one at a time
        let summary = await queue.run(QueueRunOptions(maxConcurrent: 1), only: Set(ids))

        // THEN all completed, only two hubs are kept (those of the last two to settle: a file put
        // in place with a group may settle after the next one), and a late subscriber to one of
        // them still gets its story to the end
        #expect(Set(summary.completed) == Set(ids))
        let kept = queue.subscribers.hubIDs
        #expect(kept.count == 2 && kept.isSubset(of: Set(ids)), "kept: \(kept)")
        let late = try #require(kept.first)
        var sawCompleted = false
        for await event in queue.events(for: late) {
            if case .completed = event { sawCompleted = true }
        }
        #expect(sawCompleted)
    }

    @Test func theFilesBeingPutInPlaceAreSharedOutAmongARunsWorkers() {
        // Four each up to eight workers; beyond, 32 shared out, and never fewer than one each.
        #expect(QueueWorker.finishingPerWorker(workers: 1) == 4)
        #expect(QueueWorker.finishingPerWorker(workers: 8) == 4)
        #expect(QueueWorker.finishingPerWorker(workers: 16) == 2)
        #expect(QueueWorker.finishingPerWorker(workers: 64) == 1)
        #expect(QueueWorker.finishingPerWorker(workers: 500) == 1)
        #expect(QueueWorker.finishingPerWorker(workers: 0) == 4)
    }

    @Test func destinationUsedTwiceIsRefusedAtAddTime() throws {
        let state = try TemporaryDirectory()
        let directory = try TemporaryDirectory()
        let queue = try DownloadQueue(stateDirectory: state.path)
        let a = DownloadRequest(url: try #require(URL(string: "http://127.0.0.1:1/a")), destination: .file(directory.file("same")))
        let b = DownloadRequest(url: try #require(URL(string: "http://127.0.0.1:1/b")), destination: .file(directory.file("same")))
        // WHEN two items in one batch share a destination THEN nothing is added
        #expect(throws: DownloadError.self) { try queue.add([a, b]) }
        #expect(try queue.items().isEmpty)
        // WHEN the second comes later THEN it is refused and the first stays
        try queue.add(a)
        #expect(throws: DownloadError.self) { try queue.add(b) }
        #expect(try queue.items().count == 1)
    }

    @Test func pauseResumeCancelWithTheExactEventSequence() async throws {
        // GIVEN a slow resource in the queue
        let server = try FaultServer()
        defer { server.stop() }
        let body = TestData.bytes(count: 3_000_000, seed: 9)
        server.setResource("/slow", body: body)
        server.setPersistentFaults("/slow", [.throttle(bytesPerSecond: 1_000_000)])
        let directory = try TemporaryDirectory()
        let state = try TemporaryDirectory()
        let queue = try DownloadQueue(stateDirectory: state.path)
        let id = try queue.add(try request(server, "/slow", into: directory, name: "slow"))
        let events = queue.events(for: id)

        // WHEN it runs, is paused mid-way, resumed, and run again
        async let firstRun = queue.run(options, only: [id])
        var kinds: [String] = []
        var paused = false
        for await event in events {
            kinds.append(event.kindName)
            if case .progress(let progress) = event, progress.bytes > 500_000, !paused {
                paused = true
                try queue.pause(id)
            }
            if case .paused = event { break }
        }
        let first = await firstRun
        #expect(first.paused == [id])
        #expect(try queue.item(id)?.state == .paused)
        let partial = try #require(FileManager.default.attributesOfItem(atPath: directory.file("slow") + ".haul-partial")[.size] as? Int)
        #expect(partial > 0 && partial < body.count)

        try queue.resume(id)
        #expect(try queue.item(id)?.state == .queued)
        let resumed = queue.events(for: id)
        let second = await queue.run(options, only: [id])
        #expect(second.completed == [id])
        var replayed: [String] = []
        for await event in resumed { replayed.append(event.kindName) }

        // THEN the file is bit-exact and the events tell exactly that story
        #expect(FileManager.default.contents(atPath: directory.file("slow")).map(Array.init) == body)
        let collapse = { (kinds: [String]) in kinds.reduce(into: [String]()) { if $0.last != $1 { $0.append($1) } } }
        #expect(collapse(kinds) == ["started", "response", "progress", "paused"])
        // AND a subscriber that joined while paused first got what it missed, then the live run
        #expect(collapse(replayed) == ["started", "response", "paused", "started", "response", "progress", "completed"])
        // AND the resume asked for the rest only
        #expect(server.requests.last?.header("Range") == "bytes=\(partial)-")

        // WHEN a completed download is cancelled THEN that is refused
        #expect(throws: DownloadError.self) { try queue.cancel(id) }
    }

    @Test func damagedStoredRangeFailsTheItemInsteadOfFetchingTheWholeFile() async throws {
        // GIVEN an item whose stored range cannot be read back
        let server = try FaultServer()
        defer { server.stop() }
        server.setResource("/whole.bin", body: TestData.bytes(count: 300_000, seed: 212))
        let directory = try TemporaryDirectory()
        let state = try TemporaryDirectory()
        let store = try QueueStore(directory: state.path)
        try store.add([NewDownload(url: server.url("/whole.bin"), destinationKind: .file, destination: directory.file("part"), range: "bytes=oops")])

        // WHEN the queue runs it
        let queue = try DownloadQueue(stateDirectory: state.path)
        let summary = await queue.run(QueueRunOptions(maxConcurrent: 1))

        // THEN it fails as a usage error naming the range, and nothing was fetched or written
        #expect(summary.failed.count == 1)
        #expect(summary.failed.first?.1.category == .usage)
        #expect(summary.failed.first?.1.message.contains("range") == true)
        #expect(server.requests.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: directory.file("part")))
    }

    @Test func cancelDeletingPartialOfAPausedItem() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let state = try TemporaryDirectory()
        let queue = try DownloadQueue(stateDirectory: state.path)
        let id = try queue.add(try request(server, "/x", into: directory, name: "x"), paused: true)
        _ = FileManager.default.createFile(atPath: directory.file("x") + ".haul-partial", contents: Data([1, 2, 3]))
        // WHEN a paused item is cancelled with its data THEN it is cancelled, and a partial file that
        // its record does not name (this one was planted, not written by it) is not its to delete
        try queue.cancel(id, deletingPartial: true)
        #expect(try queue.item(id)?.state == .cancelled)
        #expect(FileManager.default.fileExists(atPath: directory.file("x") + ".haul-partial"))
        // AND it can be removed from the queue
        try queue.remove(id)
        #expect(try queue.items().isEmpty)
    }
}
