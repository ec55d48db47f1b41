import Foundation
import HaulCore
import HaulTestSupport
import Observation
import Testing

@testable import Haul

/// What UI code binds to: a latest-value snapshot stream, and `@Observable` models of a download
/// and of the queue, on Linux as on Apple platforms.
@Suite("Progress for a UI", .serialized)
struct DownloadModelTests {
    @MainActor final class Changed {
        var count = 0
    }

    static func waitUntil(_ seconds: Double, _ condition: @MainActor () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        while ContinuousClock.now < deadline {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return await condition()
    }

    @Test @MainActor func anObservableDownloadModelFollowsItsDownloadToTheEnd() async throws {
        // GIVEN a 6 MiB download at 4 MiB/s (long enough for a speed measured over a second) and a model of it
        let server = try FaultServer()
        defer { server.stop() }
        server.setResource(FaultHarness.path, body: TestData.bytes(count: 6 << 20, seed: 71))
        server.setPersistentFaults(FaultHarness.path, [.throttle(bytesPerSecond: 4 << 20)])
        let directory = try TemporaryDirectory()
        var request = try FaultHarness.request(server, to: .file(directory.file("f.bin")))
        request.connections = 1
        let download = Downloader().download(request)
        let model = DownloadModel(download, every: 0.05)
        let changed = Changed()
        withObservationTracking {
            _ = model.snapshot
        } onChange: {
            Task { @MainActor in changed.count += 1 }
        }

        // WHEN it runs THEN the model moves through running with a speed, and ends complete
        #expect(await Self.waitUntil(10) { model.snapshot.phase == .running && model.snapshot.bytesPerSecond > 0 })
        #expect(await Self.waitUntil(20) { model.snapshot.phase == .completed })
        #expect(model.fraction == 1)
        #expect(model.snapshot.completion?.bytes == 6 << 20)
        // AND Observation told a watcher (as SwiftUI is told) that the snapshot changed
        #expect(changed.count == 1)

        // AND a late subscriber's first snapshot is the current state: complete
        var late = download.snapshots().makeAsyncIterator()
        #expect(await late.next()?.phase == .completed)
    }

    @Test func snapshotsFoldEventsAsAViewShowsThem() throws {
        let url = try #require(URL(string: "http://127.0.0.1:1/f"))
        var snapshot = DownloadSnapshot()
        snapshot = snapshot.folding(.started(DownloadStarted(url: url, destination: "/f", resumingFrom: 100)))
        #expect(snapshot.phase == .waiting && snapshot.bytes == 100)
        snapshot = snapshot.folding(.progress(DownloadProgress(bytes: 500, totalBytes: 1000, bytesPerSecond: 50, secondsLeft: 10)))
        #expect(snapshot.phase == .running && snapshot.fraction == 0.5 && snapshot.secondsLeft == 10)
        snapshot = snapshot.folding(.paused(DownloadProgress(bytes: 600, totalBytes: 1000, bytesPerSecond: 50, secondsLeft: 8)))
        #expect(snapshot.phase == .paused && snapshot.bytes == 600 && snapshot.bytesPerSecond == 0)
        snapshot = snapshot.folding(.failed(DownloadError(.network, "dropped")))
        #expect(snapshot.phase == .failed && snapshot.error?.message == "dropped" && snapshot.isFinished)
    }

    @Test @MainActor func anObservableQueueModelCountsARunsFiles() async throws {
        // GIVEN a queue with three small downloads and a model of it
        let server = try FaultServer()
        defer { server.stop() }
        for index in 0..<3 { server.setResource("/q\(index)", body: TestData.bytes(count: 100_000, seed: UInt64(80 + index))) }
        let directory = try TemporaryDirectory()
        let state = try TemporaryDirectory()
        let queue = try DownloadQueue(stateDirectory: state.path)
        try queue.add(try (0..<3).map { DownloadRequest(url: try #require(URL(string: server.url("/q\($0)"))), destination: .file(directory.file("q\($0)"))) })
        let model = QueueModel(queue)
        #expect(model.items.count == 3)

        // WHEN the queue runs
        _ = await queue.run(QueueRunOptions(maxConcurrent: 2))

        // THEN the model shows the run's files done and every item completed
        #expect(await Self.waitUntil(10) { model.progress.filesCompleted == 3 && model.items.allSatisfy { $0.state == .completed } })
    }
}
