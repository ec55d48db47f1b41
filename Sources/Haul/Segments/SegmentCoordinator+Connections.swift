import Foundation
import HaulCore
import HaulEngine
import HaulStore

/// The extra connections: each claims a segment from its source, fetches it through the one
/// segment verdict, and writes its bytes at their offset. A connection is a task: it waits for its
/// transfers on the transport's event loop and for its retries on the run's control, never on a
/// thread.
extension SegmentCoordinator {
    /// How one connection's run on a source ended.
    enum ConnectionEnd: Equatable {
        /// No work left, or the download stops, or the server wants fewer connections.
        case finished
        /// Go on from another source (or a new connection to the same one).
        case reassign
    }

    /// One extra connection on its source: claim a segment, fetch it, claim the next. A mirror is
    /// proven (probed, or another connection's probe awaited) once the connection holds its first
    /// segment, so a probe never loses its work to connections that started with it; a mirror
    /// that is not admitted hands the segment back at once.
    func connectionLoop(_ assignment: SegmentSources.Assignment) async -> ConnectionEnd {
        let source = assignment.source
        var validators: Validators?
        if case .fetch(_, let admitted) = assignment { validators = admitted }
        var pieces = PieceSize()
        while !shouldStop {
            if state.withLock({ $0.sources.isDropped(source) }) { return .reassign }
            let claimed = state.withLock { state -> Int? in
                // Once stopping, the progress map may be gone: nothing is claimed.
                guard !state.stopping, let claim = state.table.claim(mainNext: state.mainNext, mainEnd: state.mainEnd) else { return nil }
                if let newMainEnd = claim.newMainEnd { state.mainEnd = newMainEnd }
                progressMap?.store(prefix: state.mainNext, segments: state.table.segments)
                return claim.index
            }
            guard let index = claimed else { return .finished }
            if validators == nil {
                if case .probe = assignment {
                    validators = await probe(source)
                } else {
                    validators = await awaitProbe(source)
                }
            }
            guard let validators else {
                state.withLock { state in
                    state.table.release(index)
                    state.dropped.remove(index)
                }
                return shouldStop ? .finished : .reassign
            }
            let end = await fetch(index, from: source, validators: validators, pieces: &pieces)
            let slow = state.withLock { state -> Bool in
                state.table.release(index)
                return state.dropped.remove(index) != nil
            }
            switch end {
            case .segmentDone: continue
            case .reassign: return .reassign
            // A connection dropped for being slow starts over on a new one; any other end ends it.
            case .end: return slow ? .reassign : .finished
            }
        }
        return .finished
    }

    /// How fetching one segment ended.
    enum FetchEnd: Equatable {
        case segmentDone
        /// This connection ends (throttled, failing, stopping, or abandoned as slow).
        case end
        /// Its source is gone or failed: the segment goes back, the connection moves on.
        case reassign
    }

    /// Fetches one segment from `source` to its end, a piece at a time (`pieces`: the connection's
    /// piece size, which follows its speed), with that source's `validators` in `If-Range`. Each
    /// piece is a request of its own on the same connection, so a steal only ever takes bytes
    /// not yet asked for.
    func fetch(_ index: Int, from source: Int, validators: Validators, pieces: inout PieceSize) async -> FetchEnd {
        // The same rule as the first connection's retries (`DownloadMachine`), waits capped at
        // 2 s: the other connections carry on meanwhile.
        var retries = RetryBudget(setup.retry)
        let role: SegmentSource = source == SegmentSources.primary ? .primary : .mirror
        while !abandons(index, from: source) {
            let pieceSizes = pieces
            guard
                let piece = state.withLock({ state -> (begin: Int64, end: Int64)? in
                    let segment = state.table.segments[index]
                    guard !segment.isDone else { return nil }
                    // Near the end, a fair share of what is left, so that idle connections still find work.
                    let size = pieceSizes.next(
                        unrequested: state.table.unrequestedBytes + state.mainEnd - state.mainNext, connections: state.helpers + 1)
                    return (segment.next, state.table.request(index, upTo: size))
                })
            else {
                state.withLock { $0.sources.delivered(source) }
                return .segmentDone
            }
            let plan = ResumePlanner.segmentPlan(begin: piece.begin, end: piece.end, validators: validators, total: setup.total)
            let fetcher = SegmentFetcher(coordinator: self, index: index, source: source, role: role, plan: plan)
            let request = state.withLock { $0.requests[source] }.asking(for: plan)
            // The speed limit is the transport's to keep: a chunk it holds back pauses this transfer alone.
            let started = ContinuousClock.now
            let outcome = await transport.transfer(
                request, options: setup.transfer.paced(by: setup.rateLimiter), handler: fetcher, handlerMayBlock: false)
            pieces.observe(
                moved: Int64(fetcher.wroteBytes), seconds: (ContinuousClock.now - started).inSeconds,
                waited: ((fetcher.headArrived ?? started) - started).inSeconds)
            switch fetcher.verdict {
            case .mismatch(let reason):
                state.withLock { if $0.failure == nil { $0.failure = .restart(reason) } }
                changes.notify()
                return .end
            case .dropSource(let reason):
                dropMirror(source, reason: reason)
                return .reassign
            case .throttled where role == .mirror:
                mirrorFailed(source, reason: "it answered with status \(fetcher.status ?? 503) (too busy) \(Self.failuresSaid)")
                return .reassign
            case .throttled:
                // The server wants fewer connections: this one ends and no more are added, in
                // this run or any later one of this download (the record keeps the host's cap).
                state.withLock { state in
                    state.throttled = true
                    state.maxHelpers = max(0, state.helpers - 1)
                    let served = state.helpers + (state.mainNext < state.mainEnd ? 1 : 0) - 1
                    state.connectionCaps.note(host: setup.host, connections: served)
                    // The runner's connection, still fetching, takes the refused range on.
                    if let end = state.table.giveBack(index, mainNext: state.mainNext, mainEnd: state.mainEnd) {
                        state.mainEnd = end
                        progressMap?.store(prefix: state.mainNext, segments: state.table.segments)
                    }
                }
                return .end
            case .write, .none:
                break
            }
            let failure: TransportError? = if case .failed(let error) = outcome { error } else { nil }
            // A response that ended without a byte of its piece is retried like a failure, not spun on.
            guard failure != nil || (fetcher.wroteBytes == 0 && !abandons(index, from: source)) else { continue }
            // While it waits to try again, the piece is anyone's to take.
            state.withLock { $0.table.forgetRequest(index) }
            if role == .mirror, let failure {
                // A mirror is a helper: its failed range goes back to the others at once.
                mirrorFailed(source, reason: "its transfers failed (\(failure.message)) \(Self.failuresSaid)")
                return .reassign
            }
            if fetcher.wroteBytes > 0 {
                // A connection that made progress goes on at once, its budget renewed.
                retries.renew()
                continue
            }
            guard let retry = retries.spend(retryable: true, progressed: false, maxDelay: 2) else { return .end }
            // The same interruptible wait as the runner's retries: a pause ends it at once.
            await control.pause(seconds: retry.delay)
        }
        return state.withLock { $0.sources.isDropped(source) } ? .reassign : .end
    }

    static let failuresSaid = "\(SegmentSources.failuresBeforeDrop) times in a row"

    /// Bytes of one segment response: written at their offset, never past the segment's end.
    func write(_ bytes: UnsafeRawBufferPointer, into index: Int) -> (written: Int, done: Bool) {
        // The bytes go to disk outside the lock (other connections go on writing meanwhile). Only
        // this connection advances its segment, so `next` stays where it is; a steal never splits
        // below the piece this connection asked for, so never below a chunk in flight; and a
        // checkpoint claims `next`, which moves only once the bytes are written. Once stopping,
        // nothing is written: the file may be truncated or closed next (`stopAndWait` waits only
        // for the writes already under way, counted in `inFlight`).
        let slot = state.withLock { state -> (offset: Int64, count: Int)? in
            let segment = state.table.segments[index]
            let count = Int(min(Int64(bytes.count), segment.remaining))
            guard !state.stopping, count > 0 else { return nil }
            state.inFlight += 1
            return (segment.next, count)
        }
        guard let (offset, count) = slot else { return (0, true) }
        do throws(StoreError) {
            try file.write(UnsafeRawBufferPointer(rebasing: bytes[0..<count]), at: offset)
        } catch {
            endInFlight()
            stop(failing: error)
            return (0, true)
        }
        let result = state.withLock { state -> (Int, Bool) in
            let accepted = Int(state.table.advance(index, by: Int64(count)))
            // After the data: the map never claims a byte that is not in the page cache.
            progressMap?.advance(index, to: state.table.segments[index].next)
            return (accepted, state.table.segments[index].isDone)
        }
        endInFlight()
        figures.received(result.0)
        setup.rateLimiter?.account(result.0)
        return result
    }
}
