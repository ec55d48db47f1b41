import Testing

@testable import HaulCore

/// The download's decisions without I/O: what to send, when to retry, restart, refresh, stop.
@Suite("DownloadMachine")
struct DownloadMachineTests {
    static let limits = DownloadMachine.Limits(retry: RetryPolicy(maxRetries: 2, baseDelay: 1, maxDelay: 60), maxRestarts: 2, maxRefreshes: 1)
    static let dropped = DownloadMachine.Failure(retryable: true, message: "dropped")
    static let etag = Validators(etag: EntityTag(headerValue: "\"v1\""))

    @Test func freshDownloadSendsAPlainRequestAndFinishes() {
        var machine = DownloadMachine(limits: Self.limits)
        // GIVEN nothing on disk WHEN asked THEN a request without Range
        guard case .send(let plan) = machine.next(target: .whole, partial: nil) else {
            Issue.record("expected a request")
            return
        }
        #expect(plan.range == nil)
        // WHEN the body was written to its end THEN finish; with segments running THEN join them first
        #expect(machine.attemptEnded(.bodyFinished(segmentsRunning: false), canRefresh: false) == .finish)
        #expect(machine.attemptEnded(.bodyFinished(segmentsRunning: true), canRefresh: false) == .joinSegments)
        #expect(machine.segmentsJoined(.complete) == .finish)
        #expect(machine.segmentsJoined(.incomplete) == nil)
    }

    @Test func aTransferEndedToReadInAnotherGrainGoesOnAtOnceUncounted() {
        var machine = DownloadMachine(limits: Self.limits)
        // GIVEN a retry spent, then a transfer ended for its read grain THEN plan again: no retry, no wait
        #expect(machine.attemptEnded(.failed(Self.dropped, wroteBytes: false), canRefresh: false) == .retry(attempt: 1, of: 2, delay: 1))
        #expect(machine.attemptEnded(.regrained, canRefresh: false) == .planAgain)
        #expect(machine.state == .planning)
        // AND the budget is as it was: the next failure is the second retry
        #expect(machine.attemptEnded(.failed(Self.dropped, wroteBytes: false), canRefresh: false) == .retry(attempt: 2, of: 2, delay: 2))
        // AND a pause asked meanwhile stops it instead
        machine.requestStop(.pause)
        #expect(machine.attemptEnded(.regrained, canRefresh: false) == .stop(.pause))
    }

    @Test func resumeIsGuardedByTheRecordedValidator() {
        var machine = DownloadMachine(limits: Self.limits)
        let partial = LocalPartial(bytesOnDisk: 1000, validators: Self.etag, totalLength: 5000)
        guard case .send(let plan) = machine.next(target: .whole, partial: partial) else {
            Issue.record("expected a request")
            return
        }
        #expect(plan.range == "bytes=1000-")
        #expect(plan.ifRange == "\"v1\"")
    }

    @Test func retriesWithBackoffUntilTheBudgetIsSpentAndBytesResetIt() {
        var machine = DownloadMachine(limits: Self.limits)
        // GIVEN two retryable failures without progress THEN two retries with doubling waits, then give up
        #expect(machine.attemptEnded(.failed(Self.dropped, wroteBytes: false), canRefresh: false) == .retry(attempt: 1, of: 2, delay: 1))
        #expect(machine.attemptEnded(.failed(Self.dropped, wroteBytes: false), canRefresh: false) == .retry(attempt: 2, of: 2, delay: 2))
        #expect(machine.attemptEnded(.failed(Self.dropped, wroteBytes: false), canRefresh: false) == .giveUp(.lastFailure))
        // GIVEN a failure after bytes reached the disk THEN the budget starts afresh
        var again = DownloadMachine(limits: Self.limits)
        _ = again.attemptEnded(.failed(Self.dropped, wroteBytes: false), canRefresh: false)
        _ = again.attemptEnded(.failed(Self.dropped, wroteBytes: false), canRefresh: false)
        #expect(again.attemptEnded(.failed(Self.dropped, wroteBytes: true), canRefresh: false) == .retry(attempt: 1, of: 2, delay: 1))
    }

    @Test func notRetryableGivesUpAtOnceAndRetryAfterIsHonoured() {
        var machine = DownloadMachine(limits: Self.limits)
        let notFound = DownloadMachine.Failure(retryable: false, httpStatus: 404, message: "404")
        #expect(machine.attemptEnded(.failed(notFound, wroteBytes: false), canRefresh: false) == .giveUp(.lastFailure))
        let busy = DownloadMachine.Failure(retryable: true, retryAfter: 30, httpStatus: 503, message: "503")
        #expect(machine.attemptEnded(.failed(busy, wroteBytes: false), canRefresh: false) == .retry(attempt: 1, of: 2, delay: 30))
    }

    @Test func restartsAreBoundedWherEverTheyComeFrom() {
        var machine = DownloadMachine(limits: Self.limits)
        let changed = RestartReason(.resourceChanged, "changed")
        #expect(machine.attemptEnded(.restart(changed), canRefresh: false) == .restartFromZero(changed))
        #expect(machine.segmentsJoined(.restart(changed)) == .restartFromZero(changed))
        #expect(machine.attemptEnded(.restart(changed), canRefresh: false) == .giveUp(.tooManyRestarts(changed)))
        // a compressed partial is discarded before any request, and counts too
        var other = DownloadMachine(limits: Self.limits)
        let compressed = LocalPartial(bytesOnDisk: 10, contentEncoding: "gzip")
        guard case .restartFromZero(let reason) = other.next(target: .whole, partial: compressed) else {
            Issue.record("expected a restart")
            return
        }
        #expect(reason.code == .compressedPartial)
    }

    @Test func aRestartInsideAResponseCountsAndItsBytesRenewNoRetries() {
        var machine = DownloadMachine(limits: Self.limits)
        let ignored = RestartReason(.serverIgnoredRange, "200")
        // GIVEN attempts whose response replaces the partial (a 200 to a Range), writes, and drops
        for _ in 0..<Self.limits.maxRestarts {
            guard case .send = machine.next(target: .whole, partial: nil) else {
                Issue.record("expected a request")
                return
            }
            machine.responseReplacesPartial(ignored)
            let action = machine.attemptEnded(.failed(Self.dropped, wroteBytes: true), canRefresh: false)
            guard case .retry = action else {
                Issue.record("expected a retry, got \(action)")
                return
            }
        }
        // THEN the next one is past the restart budget, whatever bytes it wrote
        machine.responseReplacesPartial(ignored)
        #expect(machine.attemptEnded(.failed(Self.dropped, wroteBytes: true), canRefresh: false) == .giveUp(.tooManyRestarts(ignored)))
        #expect(machine.state == .gaveUp)
        // AND a response that restarted in place and then finished the file is finished
        var finishing = DownloadMachine(limits: DownloadMachine.Limits(retry: Self.limits.retry, maxRestarts: 0))
        finishing.responseReplacesPartial(ignored)
        #expect(finishing.attemptEnded(.bodyFinished(segmentsRunning: false), canRefresh: false) == .finish)
    }

    @Test func restartsInsideAResponseAndBetweenAttemptsShareOneBudget() {
        var machine = DownloadMachine(limits: Self.limits)
        let ignored = RestartReason(.serverIgnoredRange, "200")
        let changed = RestartReason(.resourceChanged, "changed")
        // GIVEN one restart inside a response and one between attempts (limit 2)
        machine.responseReplacesPartial(ignored)
        #expect(machine.attemptEnded(.restart(changed), canRefresh: false) == .restartFromZero(changed))
        // THEN the third, of either kind, gives up
        #expect(machine.attemptEnded(.restart(changed), canRefresh: false) == .giveUp(.tooManyRestarts(changed)))
    }

    @Test func theStateFollowsEveryAction() {
        var machine = DownloadMachine(limits: Self.limits)
        #expect(machine.state == .planning)
        _ = machine.next(target: .whole, partial: nil)
        #expect(machine.state == .sending)
        _ = machine.attemptEnded(.failed(Self.dropped, wroteBytes: false), canRefresh: false)
        #expect(machine.state == .waitingToRetry)
        _ = machine.next(target: .whole, partial: nil)
        _ = machine.attemptEnded(.bodyFinished(segmentsRunning: true), canRefresh: false)
        #expect(machine.state == .joining)
        #expect(machine.segmentsJoined(.incomplete) == nil)
        #expect(machine.state == .planning)
        let forbidden = DownloadMachine.Failure(retryable: false, httpStatus: 403, message: "403")
        _ = machine.attemptEnded(.failed(forbidden, wroteBytes: false), canRefresh: true)
        #expect(machine.state == .refreshing)
        #expect(machine.refreshed(true) == nil)
        #expect(machine.state == .planning)
        _ = machine.attemptEnded(.complete, canRefresh: false)
        #expect(machine.state == .finishing)
        machine.requestStop(.pause)
        _ = machine.next(target: .whole, partial: nil)
        #expect(machine.state == .stopping)
    }

    @Test func expiredURLIsRefreshedOnceThenTheFailureStands() {
        var machine = DownloadMachine(limits: Self.limits)
        let forbidden = DownloadMachine.Failure(retryable: false, httpStatus: 403, message: "403")
        // WHEN a 403 arrives and a refresher may help THEN ask it
        #expect(machine.attemptEnded(.failed(forbidden, wroteBytes: false), canRefresh: true) == .refreshURL(status: 403, attempt: 1, of: 1))
        // AND with a fresh URL, go on (nil: ask next)
        #expect(machine.refreshed(true) == nil)
        // WHEN it fails again THEN the refresh budget is spent: the failure stands
        #expect(machine.attemptEnded(.failed(forbidden, wroteBytes: false), canRefresh: true) == .giveUp(.lastFailure))
        // AND a refresher that has nothing gives up at once
        var other = DownloadMachine(limits: Self.limits)
        _ = other.attemptEnded(.failed(forbidden, wroteBytes: false), canRefresh: true)
        #expect(other.refreshed(false) == .giveUp(.lastFailure))
    }

    @Test func stopRequestsWinAndCancelOverridesPause() {
        var machine = DownloadMachine(limits: Self.limits)
        machine.requestStop(.pause)
        #expect(machine.next(target: .whole, partial: nil) == .stop(.pause))
        machine.requestStop(.cancel)
        machine.requestStop(.pause)
        #expect(machine.attemptEnded(.stopped, canRefresh: false) == .stop(.cancel))
        #expect(machine.segmentsJoined(.incomplete) == .stop(.cancel))
    }

    @Test func closedRangeAlreadyOnDiskFinishesWithoutARequest() {
        var machine = DownloadMachine(limits: Self.limits)
        let partial = LocalPartial(bytesOnDisk: 100, resourceStart: 100, validators: Self.etag, totalLength: 1000)
        #expect(machine.next(target: .range(.closed(first: 100, last: 199)), partial: partial) == .finish)
    }
}

@Suite("RetryBudget")
struct RetryBudgetTests {
    static let policy = RetryPolicy(maxRetries: 2, baseDelay: 1, maxDelay: 60)

    @Test func retriesDoubleTheirWaitUntilSpentAndProgressRenewsThem() {
        var budget = RetryBudget(Self.policy)
        #expect(budget.spend(retryable: true, progressed: false) == .init(attempt: 1, of: 2, delay: 1))
        #expect(budget.spend(retryable: true, progressed: false) == .init(attempt: 2, of: 2, delay: 2))
        #expect(budget.spend(retryable: true, progressed: false) == nil)
        // bytes reached the disk since: the budget starts again
        #expect(budget.spend(retryable: true, progressed: true) == .init(attempt: 1, of: 2, delay: 1))
        budget.renew()
        #expect(budget.used == 0)
    }

    @Test func aFailureThatCannotHelpIsNotRetriedAndWaitsHonourTheCapAndRetryAfter() {
        var budget = RetryBudget(Self.policy)
        #expect(budget.spend(retryable: false, progressed: false) == nil)
        #expect(budget.used == 0)
        #expect(budget.spend(retryable: true, progressed: false, retryAfter: 30)?.delay == 30)
        #expect(budget.spend(retryable: true, progressed: false, retryAfter: 30, maxDelay: 2)?.delay == 2)
    }
}

@Suite("BodyCursor")
struct BodyCursorTests {
    func plan(offset: Int64 = 0, overlap: Int64 = 0, expected: Int64? = nil) -> BodyPlan {
        BodyPlan(
            writeOffset: offset, overlap: overlap, expectedBodyLength: expected, resourceStart: 0, totalLength: nil,
            finalLength: expected.map { offset + $0 }, validators: .none, contentEncoding: nil, restartReason: nil)
    }

    @Test func overlapIsComparedBeforeAnythingIsWritten() {
        // GIVEN 100 bytes to compare at offset 900 of a 1000-byte file
        var cursor = BodyCursor(plan: plan(offset: 900, overlap: 100, expected: 600), fileLength: 1000, sizeLimit: nil)
        // WHEN 60 then 80 bytes arrive THEN 60 compared, then 40 compared and 40 written
        let first = cursor.take(60)
        #expect(first.compare == 0..<60 && first.compareAt == 900 && first.write.isEmpty)
        let second = cursor.take(80)
        #expect(second.compare == 0..<40 && second.compareAt == 960 && second.write == 40..<80)
        #expect(cursor.overlapDone)
        #expect(cursor.fileLength == 1040)
    }

    @Test func bytesBeyondTheAnnouncedLengthAreNeverWritten() {
        var cursor = BodyCursor(plan: plan(expected: 100), fileLength: 0, sizeLimit: nil)
        _ = cursor.take(90)
        let step = cursor.take(50)
        #expect(step.write == 0..<10)
        #expect(step.stop == .moreThanAnnounced(100))
    }

    @Test func maxSizeStopsABodyWithoutLengthAtTheLimit() {
        var cursor = BodyCursor(plan: plan(), fileLength: 0, sizeLimit: 1000)
        #expect(cursor.take(600).stop == nil)
        let step = cursor.take(600)
        #expect(step.write == 0..<400)
        #expect(step.stop == .sizeLimit(1000))
        #expect(cursor.fileLength == 1000)
    }

    @Test func sequentialConnectionStopsWhereSegmentsBegin() {
        var cursor = BodyCursor(plan: plan(expected: 10_000), fileLength: 0, sizeLimit: nil)
        #expect(cursor.take(300, segmentBoundary: 500).stop == nil)
        let step = cursor.take(300, segmentBoundary: 500)
        #expect(step.write == 0..<200)
        #expect(step.stop == .reachedSegments)
    }
}

@Suite("CheckpointPacer")
struct CheckpointPacerTests {
    @Test func progressEveryIntervalAndCheckpointsOnlyWhenDue() {
        var pacer = CheckpointPacer(progressInterval: 0.25, checkpointInterval: 1, start: 0)
        #expect(pacer.tick(now: 0.1) == (false, false))
        #expect(pacer.tick(now: 0.3) == (true, false))
        #expect(pacer.tick(now: 0.4) == (false, false))
        #expect(pacer.tick(now: 1.1) == (true, true))
        pacer.checkpointed(at: 1.1)
        #expect(pacer.tick(now: 1.4) == (true, false))
        #expect(pacer.tick(now: 2.2) == (true, true))
    }
}

@Suite("Connection decisions")
struct ConnectionDecisionTests {
    @Test func growthDoublesWhileTheThroughputRisesAndStopsWhenItDoesNot() {
        var growth = ConnectionGrowth(adaptive: true)
        // one connection at 20 MB/s: add one
        #expect(growth.judge(rate: 20e6, helpers: 0, limit: 7, throttled: false) == 1)
        // two at 26 MB/s: a real gain but far from linear, so double (not all at once)
        #expect(growth.judge(rate: 26e6, helpers: 1, limit: 7, throttled: false) == 2)
        // four at 27 MB/s: no real gain, stop growing for good
        #expect(growth.judge(rate: 27e6, helpers: 3, limit: 7, throttled: false) == 0)
        #expect(!growth.growing)
        #expect(growth.judge(rate: 100e6, helpers: 3, limit: 7, throttled: false) == 0)
    }

    @Test func nearLinearGainTakesEveryConnectionLeftAtOnce() {
        // GIVEN a server that caps each connection at 20 MB/s
        var growth = ConnectionGrowth(adaptive: true)
        #expect(growth.judge(rate: 20e6, helpers: 0, limit: 7, throttled: false) == 1)
        // WHEN two connections give 39 MB/s (near double) THEN the other six come at once
        #expect(growth.judge(rate: 39e6, helpers: 1, limit: 7, throttled: false) == 6)
        // AND eight at 150 MB/s is the limit: growth ends
        #expect(growth.judge(rate: 150e6, helpers: 7, limit: 7, throttled: false) == 0)
        #expect(!growth.growing)
    }

    @Test func aCPUBoundProcessAddsNoConnection() {
        // GIVEN one connection that already keeps every core busy (a fast local link)
        var growth = ConnectionGrowth(adaptive: true)
        // WHEN the window is judged THEN nothing is added, and growth ends for good
        #expect(growth.judge(rate: 700e6, helpers: 0, limit: 7, throttled: false, cpu: CPULoad(coresUsed: 1.6, cores: 2)) == 0)
        #expect(!growth.growing)
        #expect(growth.judge(rate: 700e6, helpers: 0, limit: 7, throttled: false) == 0)
    }

    @Test func anIdleProcessStillAddsOneConnectionAtATimeUntilOneHelps() {
        // GIVEN one connection at 20 MB/s that leaves the process almost idle (issue 36, item 12:
        // it used to take every connection at once, and a server allowing one connection per
        // client refused seven of them)
        var growth = ConnectionGrowth(adaptive: true)
        // WHEN the first window is judged THEN one connection is added, not all of them
        #expect(growth.judge(rate: 20e6, helpers: 0, limit: 15, throttled: false, cpu: Self.idle) == 1)
        // AND once the second connection doubled the throughput (a per-connection cap), the rest
        // come at once, up to 16
        #expect(growth.judge(rate: 39e6, helpers: 1, limit: 15, throttled: false, cpu: Self.idle) == 14)
        #expect(growth.judge(rate: 300e6, helpers: 15, limit: 15, throttled: false, cpu: Self.idle) == 0)
        #expect(!growth.growing)
    }

    @Test func theDefaultKeepsAddingWhileEachAdditionAddsThroughputAndStopsAtTheFirstRefusal() {
        // GIVEN a link where more connections help, less than linearly
        var growth = ConnectionGrowth(adaptive: true)
        #expect(growth.judge(rate: 10e6, helpers: 0, limit: 15, throttled: false, cpu: Self.idle) == 1)
        // WHEN two give 1.5 times one, four 1.4 times two THEN the connections keep doubling
        #expect(growth.judge(rate: 15e6, helpers: 1, limit: 15, throttled: false, cpu: Self.idle) == 2)
        #expect(growth.judge(rate: 21e6, helpers: 3, limit: 15, throttled: false, cpu: Self.idle) == 4)
        // WHEN eight add nothing over four THEN growth ends there
        #expect(growth.judge(rate: 21.5e6, helpers: 7, limit: 15, throttled: false, cpu: Self.idle) == 0)
        #expect(!growth.growing)

        // GIVEN a server that refused the second connection (503/429) THEN nothing more is added
        var refused = ConnectionGrowth(adaptive: true)
        #expect(refused.judge(rate: 10e6, helpers: 0, limit: 15, throttled: false, cpu: Self.idle) == 1)
        #expect(refused.judge(rate: 10e6, helpers: 0, limit: 15, throttled: true, cpu: Self.idle) == 0)
        #expect(!refused.growing)
    }

    static let idle = CPULoad(coresUsed: 0.05, cores: 2)

    @Test func aBusyProcessAddsOnlyTheConnectionsItsCPUCanFeed() {
        // GIVEN one connection that costs 0.9 of a core on a 2-core machine (a fast local link:
        // the budget of 1.5 cores feeds only one such connection)
        var local = ConnectionGrowth(adaptive: true)
        // WHEN the first window is judged THEN nothing is added, and growth ends
        #expect(local.judge(rate: 700e6, helpers: 0, limit: 7, throttled: false, cpu: CPULoad(coresUsed: 0.9, cores: 2)) == 0)
        #expect(!local.growing)

        // GIVEN one connection at 0.3 of a core: doubling fits
        var fast = ConnectionGrowth(adaptive: true)
        #expect(fast.judge(rate: 100e6, helpers: 0, limit: 7, throttled: false, cpu: CPULoad(coresUsed: 0.3, cores: 2)) == 1)
        // WHEN two give a near-linear gain at 0.6 of a core THEN only the connections that fit come
        // (1.5 cores at 0.3 each: five in all), not all eight
        #expect(fast.judge(rate: 195e6, helpers: 1, limit: 7, throttled: false, cpu: CPULoad(coresUsed: 0.6, cores: 2)) == 3)
    }

    @Test func cpuLoadIsCoresUsedPerSecond() {
        let load = CPULoad(cpuSeconds: 0.3, wallSeconds: 0.5, cores: 2)
        #expect(abs(load.coresUsed - 0.6) < 1e-9)
        #expect(!load.isIdle)
        #expect(load.connectionsThatFit(running: 2) == 5)
        #expect(CPULoad(cpuSeconds: 0.01, wallSeconds: 0.1, cores: 2).isIdle)
        // Nothing measured: no limit, and not idle
        #expect(CPULoad(cpuSeconds: 1, wallSeconds: 0, cores: 2) == .unknown)
        #expect(!CPULoad.unknown.isIdle)
        #expect(CPULoad.unknown.connectionsThatFit(running: 3) == Int.max)
    }

    @Test func fixedCountNeverGrowsAndThrottlingStopsGrowth() {
        var fixed = ConnectionGrowth(adaptive: false)
        #expect(fixed.judge(rate: 1, helpers: 0, limit: 7, throttled: false) == 0)
        var throttled = ConnectionGrowth(adaptive: true)
        #expect(throttled.judge(rate: 1e6, helpers: 1, limit: 7, throttled: true) == 0)
        #expect(!throttled.growing)
        var capped = ConnectionGrowth(adaptive: true)
        #expect(capped.judge(rate: 1e6, helpers: 6, limit: 7, throttled: false) == 1)
    }

    @Test func aConnectionFarBehindForThreeObservationsIsDropped() {
        var watch = SlowConnectionWatch()
        var positions: [(index: Int, next: Int64)] = [(0, 0), (1, 0), (2, 0)]
        #expect(watch.observe(positions).isEmpty)
        var dropped: [[Int]] = []
        for _ in 0..<3 {
            positions = [(0, positions[0].next + 1000), (1, positions[1].next + 1000), (2, positions[2].next + 100)]
            dropped.append(watch.observe(positions))
        }
        #expect(dropped == [[], [], [2]])
    }
}
