import Foundation
import HaulCore
import HaulEngine
import HaulTestSupport
import Synchronization
import Testing

@testable import Haul

/// A download's figures are the whole download's, published at the promised interval whoever
/// writes: with several connections under a speed limit that changes while it runs, the progress
/// never freezes (issue 36, item 1).
@Suite("Progress under a speed limit over several connections", .serialized)
struct LimitedProgressTests {
    /// Every progress report of a run, with when it was heard.
    final class Heard: Sendable {
        private let reports = Mutex<[(at: ContinuousClock.Instant, progress: DownloadProgress)]>([])
        private let snapshots = Mutex<[(at: ContinuousClock.Instant, bytes: Int64)]>([])

        func progress(_ progress: DownloadProgress) {
            reports.withLock { $0.append((.now, progress)) }
        }

        func snapshot(_ snapshot: DownloadSnapshot) {
            snapshots.withLock { $0.append((.now, snapshot.bytes)) }
        }

        var progressReports: [(at: ContinuousClock.Instant, progress: DownloadProgress)] { reports.withLock { $0 } }
        var snapshotBytes: [(at: ContinuousClock.Instant, bytes: Int64)] { snapshots.withLock { $0 } }
    }

    /// The longest silence between two reports heard from `from` on, in seconds.
    static func longestGap(_ times: [ContinuousClock.Instant], from start: ContinuousClock.Instant) -> Double {
        var last = start
        var longest = 0.0
        for time in times where time >= start {
            longest = max(longest, (time - last).inSeconds)
            last = time
        }
        return longest
    }

    @Test func progressKeepsItsIntervalWithSeveralConnectionsUnderAChangingLimit() async throws {
        // GIVEN a 24 MiB file served as fast as loopback allows, fetched over 4 connections under
        // a 2 MiB/s limit, progress promised every 0.25 s
        let server = try FaultServer()
        defer { server.stop() }
        server.setResource(FaultHarness.path, body: TestData.bytes(count: 24 << 20, seed: 361))
        let directory = try TemporaryDirectory()
        var request = try FaultHarness.request(server, to: .file(directory.file("f.bin")))
        request.progressInterval = 0.25
        request.connections = 4
        let limiter = RateLimiter(bytesPerSecond: 2 << 20)
        request.rateLimiter = limiter
        let download = Downloader().download(request)
        let heard = Heard()
        let snapshots = download.snapshots(every: 0.25)
        let follower = Task {
            for await snapshot in snapshots { heard.snapshot(snapshot) }
        }

        // WHEN it runs for 5 s, the limit changed twice meanwhile, then is cancelled
        let started = ContinuousClock.now
        let controller = Task {
            try await Task.sleep(for: .seconds(1.5))
            limiter.setLimit(bytesPerSecond: 1 << 20)
            try await Task.sleep(for: .seconds(1.5))
            limiter.setLimit(bytesPerSecond: 3 << 20)
            try await Task.sleep(for: .seconds(2))
            download.cancel()
        }
        _ = try await FaultHarness.watch(download, timeout: 30) { event in
            if case .progress(let progress) = event { heard.progress(progress) }
        }
        try await controller.value
        follower.cancel()

        // THEN the event stream reported at the promised pace from the first report to the end,
        // whichever connection the limiter let through
        let reports = heard.progressReports
        let firstAt = try #require(reports.first?.at, "no progress report at all")
        let gap = Self.longestGap(reports.map(\.at), from: firstAt)
        #expect(firstAt - started < .seconds(1), "the first report came \((firstAt - started).inSeconds) s in")
        #expect(gap < 0.75, "progress stood still for \(gap) s; \(reports.count) reports in 5 s")
        #expect(reports.count >= 14, "\(reports.count) reports in 5 s at a 0.25 s interval")
        // AND the figures are the whole download's: the bytes never go back, and they are about
        // what the limits let through (2 + 1.5 + 6 MiB, a burst aside)
        let bytes = reports.map(\.progress.bytes)
        #expect(bytes == bytes.sorted(), "bytes went back: \(bytes)")
        let last = bytes.last ?? 0
        #expect(last > 6 << 20 && last < 14 << 20, "\(last) bytes in 5 s")
        // AND the snapshots a model follows moved as often
        let moves = Set(heard.snapshotBytes.map(\.bytes)).count
        #expect(moves >= 12, "the snapshots showed \(moves) different byte counts in 5 s")
    }

    @Test func progressKeepsItsIntervalOverOneConnectionUnderALowLimit() async throws {
        // GIVEN a 4 MB file served as fast as loopback allows, fetched over one connection at
        // 4,000 B/s, progress promised every 0.25 s
        let server = try FaultServer()
        defer { server.stop() }
        server.setResource(FaultHarness.path, body: TestData.bytes(count: 4_000_000, seed: 362))
        let directory = try TemporaryDirectory()
        var request = try FaultHarness.request(server, to: .file(directory.file("f.bin")))
        request.progressInterval = 0.25
        request.connections = 1
        request.rateLimiter = RateLimiter(bytesPerSecond: 4_000)
        let download = Downloader().download(request)
        let heard = Heard()

        // WHEN it runs for 4 s, then is cancelled
        let canceller = Task {
            try await Task.sleep(for: .seconds(4))
            download.cancel()
        }
        _ = try await FaultHarness.watch(download, timeout: 30) { event in
            if case .progress(let progress) = event { heard.progress(progress) }
        }
        try await canceller.value

        // THEN progress came at the interval although the connection writes a chunk at a time,
        // seconds apart at such a limit
        let reports = heard.progressReports
        let firstAt = try #require(reports.first?.at, "no progress report at all")
        #expect(Self.longestGap(reports.map(\.at), from: firstAt) < 0.75, "\(reports.count) reports")
        #expect(reports.count >= 10, "\(reports.count) reports in 4 s at a 0.25 s interval")
        // AND the bytes move at least every second (the connection reads a quarter of a second's
        // worth at a time), and no speed shown is far above the limit
        var moved = reports.first.map { (at: $0.at, bytes: $0.progress.bytes) }
        for report in reports where report.progress.bytes != moved?.bytes {
            if let last = moved { #expect((report.at - last.at).inSeconds < 1.1, "the bytes stood still from \(last.bytes)") }
            moved = (report.at, report.progress.bytes)
        }
        let speeds = reports.map(\.progress.bytesPerSecond)
        #expect(speeds.allSatisfy { $0 <= 6_000 }, "speeds \(speeds) under a limit of 4,000 B/s")
        #expect((reports.last?.progress.bytes ?? 0) < 40_000, "\(reports.last?.progress.bytes ?? 0) bytes in 4 s")
    }

    @Test(
        arguments: [
            (nil, 262_144), (0, 262_144), (-5, 262_144), (1, 1024), (2_000, 1024), (8_192, 2_048), (1 << 20, 262_144), (Int64.max, 262_144),
        ] as [(Int64?, Int)])
    func aTransferReadsAQuarterOfASecondsWorthAtATime(pace: Int64?, buffer: Int) {
        #expect(TransferPacing.receiveBuffer(pace: pace) == buffer)
        #expect(TransferPacing.receiveBuffer(standard: 256 * 1024, pace: pace) == buffer)
    }

    @Test func aTransferIsOutOfStepWithALimitFourTimesOffEitherWay() {
        #expect(TransferPacing.readsOutOfStep(startedWith: 1024, now: 262_144))
        #expect(TransferPacing.readsOutOfStep(startedWith: 262_144, now: 2_048))
        #expect(TransferPacing.readsOutOfStep(startedWith: 1024, now: 4096))
        #expect(!TransferPacing.readsOutOfStep(startedWith: 1024, now: 4095))
        #expect(!TransferPacing.readsOutOfStep(startedWith: 65_536, now: 32_768))
    }
}

/// A speed limit shared by several downloads and their connections: shared fairly, and a
/// connection held back by it is not a slow one (issue 36, item 7).
@Suite("A shared speed limit, fairly and without waste", .serialized)
struct SharedLimitTests {
    /// The closed ranges `bytes=a-b` the server was asked for on `path`.
    static func ranges(_ server: FaultServer, _ path: String) -> [ClosedRange<Int64>] {
        server.requests.filter { $0.path == path }.compactMap { request in
            guard let range = request.header("Range"), range.hasPrefix("bytes="), !range.hasSuffix("-") else { return nil }
            let bounds = range.dropFirst(6).split(separator: "-").compactMap { Int64($0) }
            guard bounds.count == 2, bounds[0] <= bounds[1] else { return nil }
            return bounds[0]...bounds[1]
        }
    }

    @Test func twoDownloadsShareALimitEvenlyWhateverTheirConnectionsAndAskForNoByteTwice() async throws {
        // GIVEN two 32 MiB files served as fast as loopback allows, one fetched over 4
        // connections, the other over 1, both under one 512 KiB/s limit
        let server = try FaultServer()
        defer { server.stop() }
        let paths = ["/a.bin", "/b.bin"]
        for (index, path) in paths.enumerated() { server.setResource(path, body: TestData.bytes(count: 32 << 20, seed: 370 + UInt64(index))) }
        let directory = try TemporaryDirectory()
        let limiter = RateLimiter(bytesPerSecond: 512 << 10)
        let downloads = try zip(paths, [4, 1]).map { path, connections in
            var request = try FaultHarness.request(server, path, to: .file(directory.file(String(path.dropFirst()))))
            request.progressInterval = 0.25
            request.connections = connections
            request.rateLimiter = limiter
            return Downloader().download(request)
        }
        let heard = paths.map { _ in LimitedProgressTests.Heard() }

        // WHEN both run for 8 s, then are cancelled
        let canceller = Task {
            try await Task.sleep(for: .seconds(8))
            for download in downloads { download.cancel() }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (download, heard) in zip(downloads, heard) {
                group.addTask {
                    _ = try await FaultHarness.watch(download, timeout: 30) { event in
                        if case .progress(let progress) = event { heard.progress(progress) }
                    }
                }
            }
            try await group.waitForAll()
        }
        try await canceller.value

        // THEN each got about half of the 4 MiB the limit let through in 8 s
        let got = heard.map { $0.progressReports.last?.progress.bytes ?? 0 }
        let sum = got.reduce(0, +)
        #expect(sum > 3 << 20 && sum < 6 << 20, "\(got)")
        for bytes in got { #expect(Double(bytes) > Double(sum) * 0.3, "an unfair share: \(got)") }
        // AND neither stood still for more than a second
        for reports in heard.map(\.progressReports) {
            var last: (at: ContinuousClock.Instant, bytes: Int64)?
            var still = 0.0
            for report in reports {
                if let previous = last, report.progress.bytes == previous.bytes {
                    still = max(still, (report.at - previous.at).inSeconds)
                } else {
                    last = (report.at, report.progress.bytes)
                }
            }
            #expect(still < 1.0, "a download stood still for \(still) s")
        }
        // AND no byte was asked for twice: no piece was given up and asked for again because of the limit
        for path in paths {
            let asked = Self.ranges(server, path).sorted { $0.lowerBound < $1.lowerBound }
            for (before, after) in zip(asked, asked.dropFirst()) {
                #expect(!before.overlaps(after), "\(path): \(before) and \(after) both asked for; all: \(asked)")
            }
        }
    }
}
