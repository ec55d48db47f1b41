import Foundation
import HaulCore
import HaulStore
import HaulTestSupport
import Testing

@testable import Haul

/// A batch's figures (`QueueProgress`) cover what was asked for: the totals never fall below the
/// bytes, and a relaunch counts what was already complete, so its figures reach the whole.
@Suite("QueueProgress: figures of what was asked for", .serialized)
struct QueueFiguresTests {
    static let sizes = [40_000, 70_000, 100_000]

    struct Batch {
        let server: FaultServer
        let directory: TemporaryDirectory
        let state: TemporaryDirectory

        init() throws {
            server = try FaultServer()
            directory = try TemporaryDirectory()
            state = try TemporaryDirectory()
            for (index, size) in QueueFiguresTests.sizes.enumerated() {
                server.setResource("/b\(index)", body: TestData.bytes(count: size, seed: UInt64(360 + index)))
            }
        }

        func requests() throws -> [DownloadRequest] {
            try QueueFiguresTests.sizes.indices.map {
                DownloadRequest(url: try #require(URL(string: server.url("/b\($0)"))), destination: .file(directory.file("b\($0)")))
            }
        }

        /// Adds the whole batch to a queue opened anew (a launch), runs `only` those of `indices`,
        /// and returns every aggregate report of the run.
        func launch(running indices: [Int]? = nil) async throws -> [QueueProgress] {
            let queue = try DownloadQueue(stateDirectory: state.path)
            let ids = try queue.add(try requests())
            let chosen = indices.map { $0.map { ids[$0] } } ?? ids
            let reports = queue.aggregateProgress()
            let collector = Task {
                var all: [QueueProgress] = []
                for await report in reports { all.append(report) }
                return all
            }
            _ = await queue.run(QueueRunOptions(maxConcurrent: 2), only: Set(chosen))
            return await collector.value
        }
    }

    static var whole: Int64 { Int64(sizes.reduce(0, +)) }

    @Test func totalsNeverFallBelowTheBytes() async throws {
        // GIVEN a batch of three downloads
        let batch = try Batch()
        defer { batch.server.stop() }
        // WHEN it runs to completion
        let reports = try await batch.launch()
        // THEN no report's total is below its bytes, and the last says the whole, done
        for report in reports {
            if let total = report.totalBytes { #expect(report.bytes <= total, "\(report.bytes) of \(total)") }
        }
        let last = try #require(reports.last)
        #expect(last.bytes == Self.whole)
        #expect(last.totalBytes == Self.whole)
        #expect(last.filesCompleted == 3 && last.filesTotal == 3)
    }

    @Test func aRelaunchCountsWhatWasAlreadyComplete() async throws {
        // GIVEN a batch of which a first launch completed two downloads of three
        let batch = try Batch()
        defer { batch.server.stop() }
        _ = try await batch.launch(running: [0, 1])
        // WHEN the app is launched again and runs the whole batch
        let reports = try await batch.launch()
        // THEN its figures start from the two complete ones and reach the whole
        let first = try #require(reports.first { $0.filesTotal > 0 })
        #expect(first.filesCompleted >= 2, "\(first)")
        #expect(first.bytes >= Int64(Self.sizes[0] + Self.sizes[1]), "\(first)")
        let last = try #require(reports.last)
        #expect(last.filesCompleted == 3 && last.filesTotal == 3, "\(last)")
        #expect(last.bytes == Self.whole && last.totalBytes == Self.whole, "\(last)")
    }

    @Test func aRelaunchOfACompleteBatchShowsItComplete() async throws {
        // GIVEN a batch run to completion
        let batch = try Batch()
        defer { batch.server.stop() }
        _ = try await batch.launch()
        // WHEN the app is launched again and runs it
        let reports = try await batch.launch()
        // THEN the figures say the whole batch is complete (not 0 of 3, nor 0 of 0)
        let last = try #require(reports.last)
        #expect(last.filesCompleted == 3 && last.filesTotal == 3, "\(last)")
        #expect(last.bytes == Self.whole && last.totalBytes == Self.whole, "\(last)")
    }

    @Test func aLongRunningRunCountsWhatIsAddedWhileItRuns() async throws {
        // GIVEN a queue that keeps running (as `haul serve` runs it), with one download
        let batch = try Batch()
        defer { batch.server.stop() }
        let requests = try batch.requests()
        let queue = try DownloadQueue(stateDirectory: batch.state.path)
        let first = try queue.add(requests[0])
        var options = QueueRunOptions()
        options.concurrency = QueueConcurrency(limit: 2)
        let reports = queue.aggregateProgress()
        let collector = Task {
            var all: [QueueProgress] = []
            for await report in reports { all.append(report) }
            return all
        }
        let run = Task { [options] in await queue.run(options) }
        #expect(await Self.poll { (try? queue.item(first))?.state == .completed })

        // WHEN two more are added while it runs, and complete
        let more = try queue.add(Array(requests[1...]))
        #expect(await Self.poll { more.allSatisfy { (try? queue.item($0))?.state == .completed } })
        queue.stopAll()
        _ = await run.value

        // THEN the figures count them too: never more files done than in all, three of three at the end
        let all = await collector.value
        for report in all { #expect(report.filesCompleted <= report.filesTotal, "\(report)") }
        let last = try #require(all.last)
        #expect(last.filesCompleted == 3 && last.filesTotal == 3, "\(last)")
    }

    static func poll(timeout: Double = 20, _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return condition()
    }
}
