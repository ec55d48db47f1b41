import Foundation
import HaulCore
import HaulEngine
import HaulStore
import Synchronization

/// The extra connections of one segmented download: each fetches a byte range and writes it at its
/// offset, while the runner's own connection keeps writing the sequential prefix. Shares out the
/// work (an initial split, then work stealing), adds connections while they raise the throughput
/// (or as many as asked), backs off when the server says 429/503, and checkpoints: the file is
/// synced, then the record claims what the sync covered.
final class SegmentCoordinator: Sendable {
    struct Setup: Sendable {
        /// The request that got the download's first response, after its redirects: segment
        /// requests differ from it only in their range.
        let request: TransferRequest
        let transfer: TransferOptions
        let validators: Validators
        let total: Int64
        let host: String
        /// Connections besides the runner's own, at most.
        let maxHelpers: Int
        /// Add helpers only while they raise the throughput (no `-x`).
        let adaptive: Bool
        let retry: RetryPolicy
        let rateLimiter: RateLimiter?
    }

    /// Why the segmented download cannot go on.
    enum Failure: Sendable, Equatable {
        /// A segment response showed another version, a 200 or a wrong range: start over.
        case restart(RestartReason)
    }

    struct State {
        var table: SegmentTable
        var mainNext: Int64
        var mainEnd: Int64
        var helpers = 0
        var maxHelpers: Int
        var throttled = false
        var failure: Failure?
        /// Body bytes these connections received and wrote.
        var transferred: Int64 = 0
        /// A write, sync or record save failed: the download stops with this error.
        var ioFailure: StoreError?
        var stopping = false
        var threads = 0
        /// Segments whose connection was much slower than the others: it ends, another takes over.
        var dropped: Set<Int> = []
        /// Whether the runner's own connection holds one of the host's slots.
        var holdsMainSlot = false

        /// Stops every connection because a write, sync or record save failed; the first
        /// failure is the one the runner reports.
        mutating func stop(failing error: StoreError) {
            stopping = true
            if ioFailure == nil { ioFailure = error }
        }
    }

    let setup: Setup
    let file: PartialFile
    let transport: any HTTPTransport
    let control: RunControl
    let state: Mutex<State>
    private let finished = DispatchSemaphore(value: 0)
    /// Saves the record with the prefix and the segments, durably (after a sync) or not.
    let saveRecord: @Sendable (Int64, [Segment], Bool) throws(StoreError) -> Void
    /// The progress after every write, kept by the kernel if the process dies; nil: the monitor
    /// records progress for this boot every 0.1 s instead.
    let progressMap: SegmentProgressMap?

    init(
        setup: Setup,
        file: PartialFile,
        transport: any HTTPTransport,
        control: RunControl,
        mainNext: Int64,
        resumed: [Segment]?,
        progressMap: SegmentProgressMap? = nil,
        saveRecord: @escaping @Sendable (Int64, [Segment], Bool) throws(StoreError) -> Void
    ) {
        self.progressMap = progressMap
        self.setup = setup
        self.file = file
        self.transport = transport
        self.control = control
        self.saveRecord = saveRecord
        var table = SegmentTable(segments: resumed ?? [])
        var mainEnd = setup.total
        if let resumed, let first = resumed.map(\.begin).filter({ $0 >= mainNext }).min() {
            mainEnd = first
        } else if !setup.adaptive {
            mainEnd = table.split(from: mainNext, to: setup.total, count: setup.maxHelpers + 1)
        }
        state = Mutex(State(table: table, mainNext: mainNext, mainEnd: mainEnd, maxHelpers: setup.maxHelpers))
    }

    // MARK: the runner's connection

    /// Where the runner's sequential connection must stop (stealing may move it closer).
    var mainEnd: Int64 { state.withLock { $0.mainEnd } }

    /// The runner's connection has written up to `next`.
    func mainAdvanced(to next: Int64) {
        state.withLock { state in
            state.mainNext = next
            progressMap?.setPrefix(next)
        }
    }

    var failure: Failure? { state.withLock { $0.failure } }

    /// The first write, sync or record save that failed; the segmented download stopped there.
    var ioFailure: StoreError? { state.withLock { $0.ioFailure } }

    /// Body bytes the extra connections received, for speed and the summary.
    var transferred: Int64 { state.withLock { $0.transferred } }

    /// Bytes the extra connections have on disk.
    var segmentBytes: Int64 { state.withLock { $0.table.bytesDone } }

    var segments: [Segment] { state.withLock { $0.table.segments } }

    // MARK: running

    /// Starts the helpers (all at once, or one for the adaptive probe) and the checkpoint thread.
    func start() {
        // The record learns about segments before any byte lands outside the prefix: without it,
        // a crash would leave holes that the file's length could not reveal. If it cannot be
        // saved, no helper starts.
        checkpointRecordingFailure()
        guard ioFailure == nil else { return }
        state.withLock { progressMap?.store(prefix: $0.mainNext, segments: $0.table.segments) }
        file.preallocate(setup.total)
        // The runner's own connection counts against the host's limit too, while segments run.
        state.withLock { $0.holdsMainSlot = HostSlots.shared.acquire(setup.host) }
        let initial = state.withLock { state -> Int in
            let resumedWork = state.table.segments.filter { !$0.isDone }.count
            // Adaptive: the runner's connection alone first (plus whatever an earlier run left);
            // the monitor doubles the connections while the throughput keeps up, and takes the
            // rest at once when the gain is near linear (a per-connection cap). Two connections
            // from the start, or 0.3 s windows, cost 2x the CPU on a fast loopback (measured).
            return setup.adaptive ? min(resumedWork, setup.maxHelpers) : state.maxHelpers
        }
        for _ in 0..<initial { addHelper() }
        launch("haul-segments-monitor") { [self] in monitor() }
    }

    /// Stops every helper and waits for them (and the monitor) to end. Safe to call again.
    func stopAndWait() {
        let threads = state.withLock { state -> Int in
            state.stopping = true
            if state.holdsMainSlot {
                state.holdsMainSlot = false
                HostSlots.shared.release(setup.host)
            }
            defer { state.threads = 0 }
            return state.threads
        }
        for _ in 0..<threads { finished.wait() }
    }

    /// Waits for the helpers to finish their work; the monitor stops with them.
    func waitForHelpers() {
        while true {
            let (helpers, failed) = state.withLock { ($0.helpers, $0.failure != nil) }
            if helpers == 0 || failed || control.shouldStop { break }
            Thread.sleep(forTimeInterval: 0.01)
        }
        stopAndWait()
    }

    func addHelper() {
        let admitted = state.withLock { state -> Bool in
            guard !state.stopping, state.failure == nil, state.helpers < state.maxHelpers,
                HostSlots.shared.acquire(setup.host)
            else { return false }
            state.helpers += 1
            return true
        }
        guard admitted else { return }
        launch("haul-segment") { [self] in
            helperLoop()
            HostSlots.shared.release(setup.host)
            state.withLock { $0.helpers -= 1 }
        }
    }

    private func launch(_ name: String, _ body: @escaping @Sendable () -> Void) {
        state.withLock { $0.threads += 1 }
        let thread = Thread { [self] in
            body()
            finished.signal()
        }
        thread.name = name
        thread.stackSize = 1 << 20
        thread.start()
    }

    private var shouldStop: Bool {
        control.shouldStop || state.withLock { $0.stopping || $0.failure != nil }
    }

    /// Whether the connection working on `index` should give it up (stopping, or too slow).
    func abandons(_ index: Int) -> Bool {
        control.shouldStop || state.withLock { $0.stopping || $0.failure != nil || $0.dropped.contains(index) }
    }

    /// One extra connection: claim a segment, fetch it (retrying drops), claim the next.
    private func helperLoop() {
        while !shouldStop {
            let claimed = state.withLock { state -> Int? in
                guard let claim = state.table.claim(mainNext: state.mainNext, mainEnd: state.mainEnd) else { return nil }
                if let newMainEnd = claim.newMainEnd { state.mainEnd = newMainEnd }
                progressMap?.store(prefix: state.mainNext, segments: state.table.segments)
                return claim.index
            }
            guard let index = claimed else { return }
            let kept = fetch(index)
            let slow = state.withLock { state -> Bool in
                state.table.release(index)
                return state.dropped.remove(index) != nil
            }
            // A connection dropped for being slow starts over on a new one; any other failure ends it.
            if !kept && !slow { return }
        }
    }

    /// Fetches one segment to its end; false when this connection should end (throttled, failing).
    private func fetch(_ index: Int) -> Bool {
        var retries = 0
        while !abandons(index) {
            guard
                let range = state.withLock({ state -> Segment? in
                    let segment = state.table.segments[index]
                    return segment.isDone ? nil : segment
                })
            else { return true }
            let plan = ResumePlanner.segmentPlan(begin: range.next, end: range.end, validators: setup.validators, total: setup.total)
            let fetcher = SegmentFetcher(coordinator: self, index: index, plan: plan)
            let outcome = transport.perform(setup.request.asking(for: plan), options: setup.transfer, handler: fetcher)
            switch fetcher.verdict {
            case .mismatch(let reason):
                state.withLock { if $0.failure == nil { $0.failure = .restart(reason) } }
                return false
            case .throttled:
                // The server wants fewer connections: this one ends and no more are added.
                state.withLock { state in
                    state.throttled = true
                    state.maxHelpers = max(0, state.helpers - 1)
                }
                return false
            case .write, .none:
                break
            }
            if case .failed = outcome, fetcher.wroteBytes == 0 {
                retries += 1
                guard retries <= setup.retry.maxRetries else { return false }
                // The same interruptible wait as the runner's retries: a pause ends it at once.
                control.sleep(seconds: min(2, setup.retry.delay(forRetry: retries)))
            } else if case .failed = outcome {
                retries = 0
            }
        }
        return false
    }

    /// Bytes of one segment response: written at their offset, never past the segment's end.
    func write(_ bytes: UnsafeRawBufferPointer, into index: Int) -> (written: Int, done: Bool) {
        // The lock covers the write, so a steal never splits below bytes in flight and a checkpoint
        // never claims bytes not yet written.
        let result = state.withLock { state -> (Int, Bool) in
            let segment = state.table.segments[index]
            let count = Int(min(Int64(bytes.count), segment.remaining))
            guard count > 0 else { return (0, true) }
            do throws(StoreError) {
                try file.write(UnsafeRawBufferPointer(rebasing: bytes[0..<count]), at: segment.next)
            } catch {
                state.stop(failing: error)
                return (0, true)
            }
            state.table.advance(index, by: Int64(count))
            // After the data: the map never claims a byte that is not in the page cache.
            progressMap?.advance(index, to: state.table.segments[index].next)
            state.transferred += Int64(count)
            return (count, state.table.segments[index].isDone)
        }
        setup.rateLimiter?.take(result.0) { shouldStop }
        return result
    }
}
