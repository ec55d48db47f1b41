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
        #expect(await Self.waitUntil(10) { model.items.count == 3 })

        // WHEN the queue runs
        _ = await queue.run(QueueRunOptions(maxConcurrent: 2))

        // THEN the model shows the run's files done and every item completed
        #expect(await Self.waitUntil(10) { model.progress.filesCompleted == 3 && model.items.allSatisfy { $0.state == .completed } })
    }

    @Test @MainActor func aQueueModelNeverWaitsForTheStoreOnTheMainActor() async throws {
        // GIVEN a queue of three items whose store another process holds locked for 2 s
        let directory = try TemporaryDirectory()
        let state = try TemporaryDirectory()
        let queue = try DownloadQueue(stateDirectory: state.path)
        try queue.add(
            try (0..<3).map { DownloadRequest(url: try #require(URL(string: "http://127.0.0.1:9/m\($0)")), destination: .file(directory.file("m\($0)"))) })
        let locker = try StoreLocker(database: state.file("haul.sqlite"), seconds: 2)
        defer { locker.stop() }

        // WHEN a model of it is made, and asked to read the items again, on the main actor
        let started = ContinuousClock.now
        let model = QueueModel(queue)
        let refresh = Task { await model.refreshItems() }
        let blocked = ContinuousClock.now - started

        // THEN the main actor was not held while the store was locked; the items come once it is free
        #expect(blocked < .milliseconds(500), "the main actor waited \(blocked) for the store")
        #expect(await Self.waitUntil(10) { model.items.count == 3 })
        await refresh.value
    }
}

/// Another process holding a SQLite store's WAL locks for a while (python3), ended by its PID.
final class StoreLocker {
    private let process = Process()

    init(database: String, seconds: Double) throws {
        let marker = database + ".locked"
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [
            "-c",
            """
            import fcntl, os, sys, time
            # The WAL index's write, checkpoint, recovery and read-mark locks (bytes 120-127 of
            # the -shm file, SQLite's wal.c): no connection can begin a read while they are held.
            fd = os.open(sys.argv[1] + "-shm", os.O_RDWR)
            fcntl.lockf(fd, fcntl.LOCK_EX, 8, 120, os.SEEK_SET)
            open(sys.argv[2], "w").close()
            time.sleep(float(sys.argv[3]))
            """,
            database, marker, String(seconds),
        ]
        try process.run()
        let deadline = ContinuousClock.now + .seconds(10)
        while !FileManager.default.fileExists(atPath: marker), ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.02) }
        guard FileManager.default.fileExists(atPath: marker) else { throw TestSupportError("the store could not be locked") }
    }

    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        process.waitUntilExit()
    }
}
