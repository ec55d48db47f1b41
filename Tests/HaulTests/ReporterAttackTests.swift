import Foundation
import HaulTestSupport
import Synchronization
import Testing

@testable import Haul

/// Issue 36 attacked: the one-connection reporter (`RunFigures.reportWhileConnected`) against
/// pauses, resumes and cancels at any moment, under limits that change.
@Suite("The one-connection reporter attacked", .serialized)
struct ReporterAttackTests {
    @Test(.timeLimit(.minutes(2)))
    func pausedAndResumedAtAnyMomentNoProgressComesWhilePausedAndBytesNeverGoBack() async throws {
        // GIVEN a 3 MB file over one connection at 600 KB/s, progress every 20 ms
        let server = try FaultServer()
        defer { server.stop() }
        let body = TestData.bytes(count: 3_000_000, seed: 3620)
        server.setResource(FaultHarness.path, body: body)
        let directory = try TemporaryDirectory()
        let destination = directory.file("paused.bin")
        var request = try FaultHarness.request(server, to: .file(destination))
        let limiter = RateLimiter(bytesPerSecond: 600_000)
        request.rateLimiter = limiter
        request.connections = 1
        let download = Downloader().download(request)
        let events = Mutex<[String]>([])
        let bytes = Mutex<[Int64]>([])
        let watching = Task {
            try await FaultHarness.watch(download, timeout: 90) { event in
                events.withLock { $0.append(FaultHarness.kind(of: event)) }
                if case .progress(let progress) = event { bytes.withLock { $0.append(progress.bytes) } }
            }
        }
        // WHEN it is paused and resumed at random moments, its limit changed between
        var generator = SystemRandomNumberGenerator()
        for round in 0..<12 {
            try await Task.sleep(for: .milliseconds(Int.random(in: 30...300, using: &generator)))
            download.pause()
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...150, using: &generator)))
            limiter.setLimit(bytesPerSecond: round % 3 == 0 ? 1 : Int64.random(in: 100_000...900_000, using: &generator))
            download.resume()
        }
        limiter.setLimit(bytesPerSecond: 0)
        let watched = try await watching.value
        // THEN it completes bit-exact; no progress comes between a pause and the next start, and
        // the bytes reported never go back
        let kinds = watched.events.map(FaultHarness.kind(of:))
        #expect(kinds.last == "completed", "\(kinds)")
        #expect(kinds.filter { $0 == "paused" }.count >= 3, "\(kinds)")
        var paused = false
        var afterPause: [Int] = []
        for (index, kind) in kinds.enumerated() {
            if kind == "paused" { paused = true }
            if kind == "started" || kind == "response" { paused = false }
            if kind == "progress" && paused { afterPause.append(index) }
        }
        #expect(afterPause.isEmpty, "progress while paused at \(afterPause): \(kinds)")
        let reported = bytes.withLock { $0 }
        #expect(zip(reported, reported.dropFirst()).allSatisfy { $0 <= $1 }, "\(reported)")
        #expect(FileManager.default.contents(atPath: destination).map { [UInt8]($0) } == body)
    }
}

extension ReporterAttackTests {
    @Test(.timeLimit(.minutes(1)))
    func pausedAndResumedOftenTheLimitStillHolds() async throws {
        // GIVEN a 20 MB file over one connection at 200,000 B/s
        let run = try LimitedRun(seed: 3621, name: "often.bin", bytesPerSecond: 200_000)
        defer { run.server.stop() }
        let download = run.download
        // WHEN it is paused and resumed every 250 ms for 4 s
        let started = ContinuousClock.now
        for _ in 0..<16 {
            try await Task.sleep(for: .milliseconds(200))
            download.pause()
            try await Task.sleep(for: .milliseconds(50))
            download.resume()
        }
        let seconds = (ContinuousClock.now - started).inSeconds
        let bytes = try await run.cancel()
        // THEN no more came than the limit allows in that time, give or take one quarter second's read
        #expect(Double(bytes) <= 200_000 * seconds + 100_000, "\(bytes) bytes in \(seconds) s at 200,000 B/s")
    }
}

extension ReporterAttackTests {
    @Test(.timeLimit(.minutes(1)))
    func aLimitChangedOftenIsStillKept() async throws {
        // GIVEN a 20 MB file over one connection at 100,000 B/s
        let run = try LimitedRun(seed: 3622, name: "slider.bin", bytesPerSecond: 100_000)
        defer { run.server.stop() }
        let limiter = run.limiter
        // WHEN the limit moves between 100,000 and 200,000 B/s every 250 ms for 4 s (a slider)
        let started = ContinuousClock.now
        for round in 0..<16 {
            try await Task.sleep(for: .milliseconds(250))
            limiter.setLimit(bytesPerSecond: round % 2 == 0 ? 200_000 : 100_000)
        }
        let seconds = (ContinuousClock.now - started).inSeconds
        let bytes = try await run.cancel()
        // THEN no more came than the higher limit allows in that time, give or take one read
        #expect(Double(bytes) <= 200_000 * seconds + 60_000, "\(bytes) bytes in \(seconds) s at 100,000-200,000 B/s")
    }

    @Test(.timeLimit(.minutes(1)))
    func pausedAndResumedUnderLimitsChangedBetweenTheLimitStillHolds() async throws {
        // GIVEN a 20 MB file over one connection at 200,000 B/s
        let run = try LimitedRun(seed: 3623, name: "changed.bin", bytesPerSecond: 200_000)
        defer { run.server.stop() }
        let (download, limiter) = (run.download, run.limiter)
        // WHEN it is paused every 250 ms, its limit set to 1 B/s and back to 200,000 while paused, and resumed
        let started = ContinuousClock.now
        for _ in 0..<16 {
            try await Task.sleep(for: .milliseconds(200))
            download.pause()
            limiter.setLimit(bytesPerSecond: 1)
            try await Task.sleep(for: .milliseconds(50))
            limiter.setLimit(bytesPerSecond: 200_000)
            download.resume()
        }
        let seconds = (ContinuousClock.now - started).inSeconds
        let bytes = try await run.cancel()
        // THEN no more came than the limit allows in that time, give or take one quarter second's read
        #expect(Double(bytes) <= 200_000 * seconds + 100_000, "\(bytes) bytes in \(seconds) s at 200,000 B/s")
    }
}

/// A 20 MB download over one connection under a limit of its own, watched to its end for the most
/// bytes its progress and pause reports showed.
private final class LimitedRun: Sendable {
    let server: FaultServer
    let directory: TemporaryDirectory
    let limiter: RateLimiter
    let download: Download
    private let latest: MostBytes
    private let watching: Task<WatchedDownload, any Error>

    init(seed: UInt64, name: String, bytesPerSecond: Int64) throws {
        server = try FaultServer()
        server.setResource(FaultHarness.path, body: TestData.bytes(count: 20_000_000, seed: seed))
        directory = try TemporaryDirectory()
        var request = try FaultHarness.request(server, to: .file(directory.file(name)))
        limiter = RateLimiter(bytesPerSecond: bytesPerSecond)
        request.rateLimiter = limiter
        request.connections = 1
        let download = Downloader().download(request)
        let latest = MostBytes()
        self.download = download
        self.latest = latest
        watching = Task {
            try await FaultHarness.watch(download, timeout: 40) { event in
                switch event {
                case .progress(let progress), .paused(let progress): latest.saw(progress.bytes)
                default: break
                }
            }
        }
    }

    /// Cancels the download and waits for its end; returns the most bytes reported before.
    func cancel() async throws -> Int64 {
        let bytes = latest.most
        download.cancel()
        _ = try await watching.value
        return bytes
    }
}

/// The largest byte count seen.
private final class MostBytes: Sendable {
    private let value = Mutex<Int64>(0)

    func saw(_ bytes: Int64) {
        value.withLock { $0 = max($0, bytes) }
    }

    var most: Int64 { value.withLock { $0 } }
}
