/// The decisions of one download run as a value-type state machine (the shape of
/// async-http-client's request state machines): the runner reports what happened — the bytes on
/// disk before an attempt, how an attempt ended, how the segments joined, a pause or cancel — and
/// carries out the action returned. No I/O, no clock: every decision is tested without a network.
///
/// What happens inside one response (which body bytes are compared, written or refused) is
/// `BodyCursor`'s; what a response head means is `ResponseVerdict`'s. The one decision taken
/// inside a response is the machine's: whether a response that replaces the bytes on disk (a 200
/// to a request for the rest) may do so (`responseReplacesPartial`), so every restart of a run is
/// counted here, whether it is carried out between attempts or inside one.
package struct DownloadMachine: Sendable {
    /// How many times each kind of second chance may be taken in one run.
    package struct Limits: Sendable, Equatable {
        /// Retries after transient failures, and the waits between them.
        package var retry: RetryPolicy
        /// Restarts from byte 0 before the resource is declared too unstable.
        package var maxRestarts: Int
        /// Fresh URLs taken from the refresher after 401/403/410.
        package var maxRefreshes: Int

        /// Limits with these budgets.
        package init(retry: RetryPolicy, maxRestarts: Int = 3, maxRefreshes: Int = 3) {
            self.retry = retry
            self.maxRestarts = maxRestarts
            self.maxRefreshes = maxRefreshes
        }
    }

    /// A request from the API to stop the run.
    package enum Stop: Int, Sendable, Equatable, Comparable {
        /// Stop at a checkpoint and keep everything for a resume.
        case pause = 1
        /// Stop for good; the partial file and its record stay on disk.
        case cancel = 2
        /// Stop for good and remove the partial file and its record.
        case cancelAndDelete = 3

        package static func < (a: Stop, b: Stop) -> Bool { a.rawValue < b.rawValue }
    }

    /// An attempt's failure as the machine needs to know it.
    package struct Failure: Sendable, Equatable {
        /// Trying again could help (a dropped connection, a 503).
        package var retryable: Bool
        /// Seconds the server asked to wait (Retry-After).
        package var retryAfter: Double?
        /// The HTTP status, when the failure is one.
        package var httpStatus: Int?
        /// Shown with the retry.
        package var message: String

        /// A failure as described by its fields.
        package init(retryable: Bool, retryAfter: Double? = nil, httpStatus: Int? = nil, message: String) {
            self.retryable = retryable
            self.retryAfter = retryAfter
            self.httpStatus = httpStatus
            self.message = message
        }
    }

    /// How an attempt (one request, its redirects and its response) ended.
    package enum AttemptEnd: Sendable, Equatable {
        /// The body was written to its end; `segmentsRunning` when other connections fetch the rest.
        case bodyFinished(segmentsRunning: Bool)
        /// The server proved the bytes on disk are the whole thing (416 with the right length).
        case complete
        /// The bytes on disk must be given up.
        case restart(RestartReason)
        /// The transfer stopped because a pause or cancel arrived.
        case stopped
        /// The runner ended it to read in another grain (the speed limit changed): it goes on
        /// from the bytes on disk at once, counted neither as a retry nor as a restart.
        case regrained
        /// It failed; `wroteBytes` when body bytes reached the disk first.
        case failed(Failure, wroteBytes: Bool)

        /// The file is whole (or its last connection finished): nothing a budget could stop.
        var isFinished: Bool {
            switch self {
            case .bodyFinished, .complete: return true
            case .restart, .stopped, .regrained, .failed: return false
            }
        }
    }

    /// How the other connections of a segmented download ended.
    package enum SegmentsEnd: Sendable, Equatable {
        /// Every segment is in: the file is complete.
        case complete
        /// A segment response showed another version, a 200 or a wrong range.
        case restart(RestartReason)
        /// Some connections gave up: one connection goes on from the contiguous prefix.
        case incomplete
    }

    /// Why the run gives up.
    package enum GiveUp: Sendable, Equatable {
        /// The last attempt's failure stands (not retryable, or the retries ran out).
        case lastFailure
        /// The resource kept changing under the download.
        case tooManyRestarts(RestartReason)
    }

    /// What the runner does next.
    package enum Action: Sendable, Equatable {
        /// Send this request and report how it ended with `attemptEnded`.
        case send(RequestPlan)
        /// Wait for the other connections, then report with `segmentsJoined`.
        case joinSegments
        /// Sync, mark finished, move into place, forget the record.
        case finish
        /// Give up the bytes on disk (truncate, or put an adopted file back) and ask `next` again.
        case restartFromZero(RestartReason)
        /// Checkpoint, wait `delay` seconds (a pause ends the wait), then ask `next` again.
        case retry(attempt: Int, of: Int, delay: Double)
        /// Ask the URL refresher for a fresh URL; report with `refreshed`.
        case refreshURL(status: Int, attempt: Int, of: Int)
        /// Checkpoint (or delete) and end the run as asked.
        case stop(Stop)
        /// End the run with a failure.
        case giveUp(GiveUp)
        /// Ask `next` again at once: the attempt was ended to be sent anew (`AttemptEnd.regrained`).
        case planAgain
    }

    /// Where the run is: what the last action asked the runner to do.
    package enum State: Sendable, Equatable {
        /// Deciding the next request from the bytes on disk (`next`).
        case planning
        /// An attempt is out; `attemptEnded` reports how it ended.
        case sending
        /// Waiting for the other connections (`segmentsJoined`).
        case joining
        /// Waiting before a retry; then `next`.
        case waitingToRetry
        /// The bytes on disk are given up; then `next`.
        case restarting
        /// Waiting for the URL refresher (`refreshed`).
        case refreshing
        /// Putting the file in place: the run is done.
        case finishing
        /// Pausing or cancelling, as asked: the run is done.
        case stopping
        /// The run failed for good.
        case gaveUp
    }

    /// The budgets of this run.
    package let limits: Limits
    /// Where the run is.
    package private(set) var state = State.planning
    private var retries: RetryBudget
    private var restarts = 0
    private var refreshes = 0
    private var stopRequested: Stop?
    /// The failure waiting for the refresher's answer.
    private var refreshing: Failure?
    /// The restart the current attempt made inside its response.
    private var inResponse: RestartReason?

    /// A machine at the start of a run, no second chance taken yet.
    package init(limits: Limits) {
        self.limits = limits
        retries = RetryBudget(limits.retry)
    }

    /// A pause or cancel arrived; a cancel overrides a pause, never the other way round.
    package mutating func requestStop(_ stop: Stop) {
        stopRequested = max(stopRequested ?? stop, stop)
    }

    /// Before each attempt: what to send for the bytes on disk, or whether nothing is left to do.
    package mutating func next(target: DownloadTarget, partial: LocalPartial?) -> Action {
        if let stopRequested { return enter(.stop(stopRequested)) }
        switch ResumePlanner.plan(target: target, partial: partial) {
        case .alreadyComplete: return enter(.finish)
        case .discardPartial(let reason): return restart(reason)
        case .send(let plan):
            inResponse = nil
            return enter(.send(plan))
        }
    }

    /// Inside an attempt: the response's head says it replaces the bytes on disk (a 200 with the
    /// whole file to a request for the rest), and the runner gives them up. Counted as a restart
    /// against the same budget as every other. Past the budget the response may still finish the
    /// file (it holds the whole of it), but its failure is not retried.
    package mutating func responseReplacesPartial(_ reason: RestartReason) {
        restarts += 1
        inResponse = reason
    }

    /// After an attempt.
    /// - Parameter canRefresh: a URL refresher exists and the download has something to continue.
    ///
    /// Bytes written after the response replaced the partial (`responseReplacesPartial`) replaced
    /// what was there, so they do not renew the retry budget.
    package mutating func attemptEnded(_ end: AttemptEnd, canRefresh: Bool) -> Action {
        let replaced = inResponse
        inResponse = nil
        if let replaced, restarts > limits.maxRestarts, !end.isFinished { return enter(.giveUp(.tooManyRestarts(replaced))) }
        switch end {
        case .bodyFinished(segmentsRunning: true):
            return enter(.joinSegments)
        case .bodyFinished, .complete:
            return enter(.finish)
        case .restart(let reason):
            return restart(reason)
        case .stopped:
            return enter(.stop(stopRequested ?? .pause))
        case .regrained:
            return enter(stopRequested.map { .stop($0) } ?? .planAgain)
        case .failed(let failure, let wroteBytes):
            if canRefresh, let status = failure.httpStatus, [401, 403, 410].contains(status), refreshes < limits.maxRefreshes {
                refreshes += 1
                refreshing = failure
                return enter(.refreshURL(status: status, attempt: refreshes, of: limits.maxRefreshes))
            }
            return retryOrGiveUp(failure, progressed: wroteBytes && replaced == nil)
        }
    }

    /// The refresher's answer: a fresh URL to continue from, or none.
    package mutating func refreshed(_ gotURL: Bool) -> Action? {
        guard let failure = refreshing else { return nil }
        refreshing = nil
        if gotURL {
            state = .planning
            return nil
        }
        return retryOrGiveUp(failure, progressed: false)
    }

    /// After the other connections of a segmented download joined. Nil: ask `next` again (the
    /// runner has cut the file back to its contiguous prefix and goes on over one connection).
    package mutating func segmentsJoined(_ end: SegmentsEnd) -> Action? {
        if let stopRequested { return enter(.stop(stopRequested)) }
        switch end {
        case .complete: return enter(.finish)
        case .restart(let reason): return restart(reason)
        case .incomplete:
            state = .planning
            return nil
        }
    }

    private mutating func restart(_ reason: RestartReason) -> Action {
        restarts += 1
        guard restarts <= limits.maxRestarts else { return enter(.giveUp(.tooManyRestarts(reason))) }
        return enter(.restartFromZero(reason))
    }

    private mutating func retryOrGiveUp(_ failure: Failure, progressed: Bool) -> Action {
        guard let retry = retries.spend(retryable: failure.retryable, progressed: progressed, retryAfter: failure.retryAfter) else {
            return enter(.giveUp(.lastFailure))
        }
        return enter(.retry(attempt: retry.attempt, of: retry.of, delay: retry.delay))
    }

    /// Moves to the state an action puts the run in, and returns the action.
    private mutating func enter(_ action: Action) -> Action {
        switch action {
        case .send: state = .sending
        case .joinSegments: state = .joining
        case .finish: state = .finishing
        case .restartFromZero: state = .restarting
        case .retry: state = .waitingToRetry
        case .refreshURL: state = .refreshing
        case .stop: state = .stopping
        case .giveUp: state = .gaveUp
        case .planAgain: state = .planning
        }
        return action
    }
}
