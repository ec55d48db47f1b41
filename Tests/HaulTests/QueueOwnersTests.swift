import Foundation
import HaulCore
import HaulStore
import Testing

@testable import Haul

/// The queue's owners of live state, each on its own (no queue, no network).
@Suite("Queue owners: subscribers, progress board, running items, held leases")
struct QueueOwnersTests {
    static func progress(_ bytes: Int64, of total: Int64?) -> DownloadProgress {
        DownloadProgress(bytes: bytes, totalBytes: total, bytesPerSecond: 10, secondsLeft: nil)
    }

    // MARK: QueueProgressBoard

    @Test func aDownloadLeavingTheActiveSetMovesItsBytesToTheTallyInOneStep() throws {
        // GIVEN a run of two downloads, both moving
        let board = QueueProgressBoard()
        board.begin(QueueTally())
        board.started(1)
        board.started(2)
        _ = board.record(Self.progress(400, of: 1000), of: 1, isPause: false)
        _ = board.record(Self.progress(50, of: 100), of: 2, isPause: false)
        // WHEN one completes and the other fails
        board.ended(1, .completed(bytes: 1000))
        board.ended(2, .failed)
        // THEN the report counts each once: the completed one at its size, the failed one at its bytes
        let report = try #require(board.report(force: true))
        #expect(report.filesCompleted == 1 && report.filesFailed == 1 && report.filesTotal == 2)
        #expect(report.bytes == 1050 && report.totalBytes == 1100)
        #expect(report.active.isEmpty && board.running.isEmpty)
        #expect(board.aggregate == report)
    }

    @Test func aLostDownloadCountsForNothing() throws {
        // GIVEN a download moving
        let board = QueueProgressBoard()
        board.started(7)
        _ = board.record(Self.progress(300, of: 1000), of: 7, isPause: false)
        // WHEN its lease is lost and it ends
        board.ended(7, .lost)
        // THEN its bytes are neither moving nor ended, and it is neither completed nor failed
        let report = try #require(board.report(force: true))
        #expect(report.bytes == 0 && report.filesCompleted == 0 && report.filesFailed == 0)
        #expect(board.last(7) == nil)
    }

    @Test func progressIsDueAtMostOnceASecondAndAPauseAlways() {
        // GIVEN a download started now, whose response named its file
        let board = QueueProgressBoard()
        let start = ContinuousClock.now
        board.started(1, at: start)
        board.setDestination("/tmp/x", of: 1)
        // THEN a report within its first second is not due, one after it is (with the file)
        #expect(board.record(Self.progress(1, of: 10), of: 1, isPause: false, at: start + .milliseconds(500)) == nil)
        #expect(board.record(Self.progress(2, of: 10), of: 1, isPause: false, at: start + .seconds(1)) == .init(destination: "/tmp/x"))
        #expect(board.record(Self.progress(3, of: 10), of: 1, isPause: false, at: start + .milliseconds(1500)) == nil)
        // AND a pause is due at once, and its figures are the latest
        #expect(board.record(Self.progress(4, of: 10), of: 1, isPause: true, at: start + .milliseconds(1600)) != nil)
        #expect(board.last(1)?.progress.bytes == 4)
    }

    @Test func aThrottledReportWaitsAQuarterSecondAForcedOneNever() {
        let board = QueueProgressBoard()
        #expect(board.report(force: false) != nil)
        #expect(board.report(force: false) == nil)
        #expect(board.report(force: true) != nil)
    }

    // MARK: HeldLeases

    private static let owner = LeaseOwner()

    private func lease(_ item: Int64, _ epoch: Int64) -> Lease {
        Lease(item: item, owner: Self.owner, epoch: epoch)
    }

    @Test func aLeaseIsWritableFromItsClaimUntilItIsLostOrLetGo() {
        // GIVEN two items claimed
        let leases = HeldLeases()
        leases.claimed(lease(1, 5))
        leases.claimed(lease(2, 9))
        #expect(leases.held == [1: lease(1, 5), 2: lease(2, 9)])
        #expect(leases.writable(1) == lease(1, 5))
        // WHEN one is lost
        #expect(leases.lose(lease(1, 5)))
        // THEN nothing more is written for it, though it stays held until its settlement
        #expect(leases.writable(1) == nil && leases.isLost(1))
        #expect(leases.held[1] == lease(1, 5))
        // AND its loss is taken once
        #expect(leases.takeLost(1) && !leases.takeLost(1))
        // WHEN the other's settlement is committed, it is let go
        leases.letGo([lease(2, 9)])
        #expect(leases.writable(2) == nil && leases.held[2] == nil)
    }

    @Test func aLeaseOfAnotherEpochIsNeitherLostNorLetGoForAnOldOne() {
        // GIVEN an item claimed again under a new epoch
        let leases = HeldLeases()
        leases.claimed(lease(1, 5))
        leases.claimed(lease(1, 6))
        // WHEN the old epoch's loss or settlement arrives
        #expect(!leases.lose(lease(1, 5)))
        leases.letGo([lease(1, 5)])
        // THEN the new lease is untouched
        #expect(leases.writable(1) == lease(1, 6))
        // AND a claim clears a loss of an earlier lease
        leases.lose(1)
        leases.claimed(lease(1, 7))
        #expect(leases.writable(1) == lease(1, 7))
    }

    // MARK: RunningItems

    @Test func drainingHandsBackWhatRunsAndCountsForTheWholeRun() {
        // GIVEN two downloads running, one with a limiter
        let running = RunningItems()
        let concurrency = QueueConcurrency(limit: 2)
        running.begin(draining: false, concurrency: concurrency)
        #expect(running.started(1, RunControl()) && running.started(2, RunControl()))
        running.attach(RateLimiter(bytesPerSecond: 100), to: 2)
        #expect(running.concurrency === concurrency && !running.isDraining)
        // WHEN the run drains
        let controls = running.drain()
        // THEN both controls come back, and the run is draining
        #expect(controls.count == 2 && running.isDraining)
        // AND a download leased before the stop is not started once it drains
        #expect(!running.started(3, RunControl()))
        #expect(running.drain().count == 2)
        // AND a download that ends takes its control and limiter along
        running.ended(2)
        #expect(running.control(2) == nil && running.limiter(2) == nil && running.controls.count == 1)
        running.endRun()
        #expect(running.concurrency == nil)
    }

    // MARK: QueueSubscribers

    @Test func onlyTheLastFinishedHubsAreKept() {
        // GIVEN subscribers that keep two finished hubs, and three finished downloads
        let subscribers = QueueSubscribers()
        subscribers.setFinishedHubLimit(2)
        for id in Int64(1)...3 {
            let hub = subscribers.hub(for: id, fresh: true) { EventHub() }
            hub.publish(.cancelled)
            subscribers.keepFinishedHub(id)
        }
        // THEN the oldest is let go
        #expect(subscribers.hubIDs == [2, 3])
        // AND a fresh hub replaces a finished one, a hub asked for again is the same
        let finished = subscribers.hub(for: 3, fresh: false) { EventHub() }
        let fresh = subscribers.hub(for: 3, fresh: true) { EventHub() }
        #expect(finished !== fresh && subscribers.hub(for: 3, fresh: true) { EventHub() } === fresh)
        subscribers.forgetHub(3)
        #expect(subscribers.hubIDs == [2])
    }

    @Test func anAggregateStreamStartsWithTheCurrentReportAndEndsWithTheRun() async {
        // GIVEN an aggregate stream added while the current report counts 3 files
        let subscribers = QueueSubscribers()
        let (stream, continuation) = AsyncStream<QueueProgress>.makeStream()
        var current = QueueProgress()
        current.filesTotal = 3
        _ = subscribers.addAggregate(continuation, current: { [current] in current })
        // WHEN a report is published and the run's streams end
        var next = current
        next.filesCompleted = 1
        subscribers.publish(next)
        subscribers.endRunStreams()
        // THEN the stream got both, in order, and ended
        var got: [QueueProgress] = []
        for await report in stream { got.append(report) }
        #expect(got == [current, next])
    }
}
