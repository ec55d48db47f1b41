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
///
/// Each connection, and the monitor, is a task: a connection's transfers run on the transport's
/// event loop (its bytes are written there, in its callbacks), its retries wait without a thread,
/// and the monitor's syncs go to `BlockingWork`. No thread is the coordinator's own.
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
        /// The mirrors' requests (`TransferRequest.mirror`), as given: each is probed before use.
        var mirrors: [TransferRequest] = []
        /// The download's redirect rules, for a mirror's redirects.
        var redirects = RedirectPolicy()
        /// The digest the whole file is checked against (the user's checksum, else the one the
        /// primary published): a mirror publishing another is dropped before use.
        var wholeFileDigest: Checksum?
        /// Mirrors may serve although `wholeFileDigest` is nil.
        var allowsUnverifiedMirrors = false
        /// Hosts that refused an extra connection of this download before (from its record).
        var connectionCaps: [ConnectionCap] = []
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
        /// A write, sync or record save failed: the download stops with this error.
        var ioFailure: StoreError?
        var stopping = false
        /// Writes, monitor checkpoints and mirror notes under way: `stopAndWait` waits for them.
        var inFlight = 0
        /// Segments whose connection was much slower than the others: it ends, another takes over.
        var dropped: Set<Int> = []
        /// Whether the runner's own connection holds one of the host's slots.
        var holdsMainSlot = false
        /// The primary and the mirrors: which are proven, how many connections each has.
        var sources: SegmentSources
        /// Each source's request (index 0 the primary's): a mirror's becomes the final hop of its
        /// probe's redirects once admitted.
        var requests: [TransferRequest]
        /// Hosts that refused an extra connection, with the connections they took: saved with
        /// every checkpoint, so the download never asks them for more.
        var connectionCaps: [ConnectionCap]

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
    /// Told when the connections, the failures, the stop or the sources change (and on every
    /// request of the control): what `waitForHelpers`, the monitor and a mirror's waiters wait on.
    let changes = ChangeSignal()
    /// Told when the runner's connection advances: what a mirror's probe waits on for its window.
    let mainProgress = ChangeSignal()
    /// The observation of the control that tells `changes`, while the connections run.
    private let controlObservation = Mutex<Int?>(nil)
    /// Saves the record with the prefix, the segments and the hosts' connection caps, durably
    /// (after a sync) or not.
    let saveRecord: @Sendable (Int64, [Segment], Bool, [ConnectionCap]) throws(StoreError) -> Void
    /// The progress after every write, kept by the kernel if the process dies; nil: the monitor
    /// records progress for this boot every 0.1 s instead.
    let progressMap: SegmentProgressMap?
    /// Each source's host, for `HostSlots` (index 0 the primary's).
    let hosts: [String]
    /// Told when a mirror is admitted or dropped.
    let onMirror: @Sendable (MirrorNote) -> Void
    /// The run's figures: every connection's bytes go there, and the reporter asks it when a
    /// progress report is due.
    let figures: RunFigures
    /// Publishes a progress report: while the connections run, the reporter makes them all.
    let report: @Sendable (DownloadProgress) -> Void

    init(
        setup: Setup,
        file: PartialFile,
        transport: any HTTPTransport,
        control: RunControl,
        mainNext: Int64,
        resumed: [Segment]?,
        progressMap: SegmentProgressMap? = nil,
        figures: RunFigures,
        report: @escaping @Sendable (DownloadProgress) -> Void = { _ in },
        onMirror: @escaping @Sendable (MirrorNote) -> Void = { _ in },
        saveRecord: @escaping @Sendable (Int64, [Segment], Bool, [ConnectionCap]) throws(StoreError) -> Void
    ) {
        self.progressMap = progressMap
        self.figures = figures
        self.report = report
        self.onMirror = onMirror
        hosts = [setup.host] + setup.mirrors.map { $0.url.host ?? "" }
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
        state = Mutex(
            State(
                table: table, mainNext: mainNext, mainEnd: mainEnd, maxHelpers: setup.maxHelpers,
                sources: SegmentSources(primaryValidators: setup.validators, mirrorCount: setup.mirrors.count),
                requests: [setup.request] + setup.mirrors, connectionCaps: setup.connectionCaps))
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
        mainProgress.notify()
    }

    var failure: Failure? { state.withLock { $0.failure } }

    /// The first write, sync or record save that failed; the segmented download stopped there.
    var ioFailure: StoreError? { state.withLock { $0.ioFailure } }

    /// Bytes the extra connections have on disk.
    var segmentBytes: Int64 { state.withLock { $0.table.bytesDone } }

    var segments: [Segment] { state.withLock { $0.table.segments } }

    /// Hosts that refused an extra connection of this download, this run's refusals included.
    var connectionCaps: [ConnectionCap] { state.withLock { $0.connectionCaps } }

    // MARK: running

    /// Starts the helpers (all at once, or one for the adaptive probe) and the monitor.
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
        let changes = self.changes
        controlObservation.withLock { $0 = control.observe { changes.notify() } }
        for _ in 0..<initial { addHelper() }
        Task { [self] in await monitor() }
        // From now on their reporter publishes the download's figures, not the runner's.
        figures.segmentsReport(true)
        Task { [self] in await reportProgress() }
    }

    /// Stops every helper and the monitor, and waits for the writes and the checkpoint under way
    /// to end: once it returns, none of them touches the file, the record or the progress map
    /// again. It never waits for a transfer (each ends by itself at its next callback, moments
    /// later), so the event loop's thread may call it: a response that replaces the partial does.
    /// Safe to call again.
    func stopAndWait() {
        state.withLock { state in
            state.stopping = true
            if state.holdsMainSlot {
                state.holdsMainSlot = false
                HostSlots.shared.release(setup.host)
            }
        }
        changes.notify()
        mainProgress.notify()
        // Short: a write at its offset, or a sync of the monitor's.
        changes.wait { [self] in state.withLock { $0.inFlight == 0 } }
        if let token = controlObservation.withLock({ $0.take() }) { control.stopObserving(token) }
    }

    /// Counts a checkpoint of the monitor's (or a mirror's note, or a progress report) in `inFlight`, unless the
    /// connections are stopping (false then: it may not start).
    func beginInFlight() -> Bool {
        state.withLock { state in
            guard !state.stopping else { return false }
            state.inFlight += 1
            return true
        }
    }

    /// One write or checkpoint counted in `inFlight` ended.
    func endInFlight() {
        let stopping = state.withLock { state -> Bool in
            state.inFlight -= 1
            return state.stopping
        }
        if stopping { changes.notify() }
    }

    /// Waits for the helpers to finish their work; the monitor stops with them.
    func waitForHelpers() {
        changes.wait { [self] in helpersEnded }
        stopAndWait()
    }

    /// `waitForHelpers`' wait, as a task's (no thread waits); the stop that follows it is `waitForHelpers`'.
    func waitForHelpersToEnd() async {
        _ = await changes.waitAsync { [self] in helpersEnded }
    }

    /// The other connections have ended, one failed, or a stop came.
    private var helpersEnded: Bool {
        let (helpers, failed) = state.withLock { ($0.helpers, $0.failure != nil) }
        return helpers == 0 || failed || control.shouldStop
    }

    func addHelper() {
        let assignment = state.withLock { state -> SegmentSources.Assignment? in
            guard !state.stopping, state.failure == nil, state.helpers < state.maxHelpers,
                let assignment = assignSource(&state)
            else { return nil }
            state.helpers += 1
            return assignment
        }
        guard let assignment else { return }
        Task { [self] in
            var current: SegmentSources.Assignment? = assignment
            while let assignment = current {
                let end = await connectionLoop(assignment)
                current = state.withLock { state in
                    HostSlots.shared.release(hosts[assignment.source])
                    state.sources.release(assignment)
                    // A connection that lost its source (a mirror dropped, a slow or failed
                    // transfer) goes on from the least busy source left.
                    guard end == .reassign, !state.stopping, state.failure == nil else { return nil }
                    return assignSource(&state)
                }
            }
            state.withLock { $0.helpers -= 1 }
            changes.notify()
        }
    }

    /// Under the lock: a source for a new connection, one whose host has a free slot (taken).
    private func assignSource(_ state: inout State) -> SegmentSources.Assignment? {
        var excluded: Set<Int> = []
        while let assignment = state.sources.assign(excluding: excluded) {
            if HostSlots.shared.acquire(hosts[assignment.source]) { return assignment }
            state.sources.release(assignment)
            excluded.insert(assignment.source)
        }
        return nil
    }

    var shouldStop: Bool {
        control.shouldStop || state.withLock { $0.stopping || $0.failure != nil }
    }

    /// Whether the connection working on `index` from `source` should give it up (stopping, too
    /// slow, or its mirror was dropped).
    func abandons(_ index: Int, from source: Int = SegmentSources.primary) -> Bool {
        control.shouldStop
            || state.withLock {
                $0.stopping || $0.failure != nil || $0.dropped.contains(index) || $0.sources.isDropped(source)
            }
    }
}
