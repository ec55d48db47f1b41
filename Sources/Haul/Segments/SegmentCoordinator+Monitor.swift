import Foundation
import HaulCore
import HaulStore

extension SegmentCoordinator {
    // MARK: monitor: checkpoints and the adaptive connection count

    /// A task: its ticks wait without a thread (a stop ends the wait at once), its syncs and
    /// record saves run on `BlockingWork`, counted in `inFlight` so that `stopAndWait` waits for
    /// the one under way and none starts after it.
    func monitor() async {
        var lastBytes = state.withLock { $0.mainNext + $0.table.bytesDone }
        var growth = ConnectionGrowth(adaptive: setup.adaptive)
        var cpu = CPUWatch()
        var slow = SlowConnectionWatch()
        var judged = ContinuousClock.now
        var checkpointed = judged
        while true {
            // Progress for this boot is in the mapped file after every write (else recorded every
            // 0.1 s); every second the file is synced and the record made durable. While the
            // connection count grows, the throughput is judged every 0.3 s: each step of the
            // growth costs a window, and on a server that caps each connection the steps before
            // all the connections run are what the default loses to a fixed 16.
            let window = growth.growing ? 0.3 : 1.0
            var slept = 0.0
            while slept < window - 0.01, !isStopping {
                // A tick of the monitor's clock; a stop ends it at once.
                await changes.waitAsync(timeout: 0.1) { [self] in isStopping }
                slept += 0.1
                if progressMap == nil { await offThread { recordProgress() } }
            }
            if !growth.growing || ContinuousClock.now - checkpointed >= .seconds(1) {
                checkpointed = .now
                await offThread { checkpointRecordingFailure() }
            }
            // Whoever stopped the connections checkpoints (or deletes) what they leave.
            if isStopping { return }
            if !growth.growing { dropSlowConnections(&slow) }
            let bytes = state.withLock { $0.mainNext + $0.table.bytesDone }
            // Over the time that really went by: a loaded machine's ticks come late.
            let now = ContinuousClock.now
            let rate = Double(bytes - lastBytes) / max((now - judged).inSeconds, 0.05)
            judged = now
            lastBytes = bytes
            let (helpers, throttled, limit) = state.withLock { ($0.helpers, $0.throttled, $0.maxHelpers) }
            // A run under a speed limit is idle because of the limit: that says nothing of the link.
            var load = cpu.loadSinceLastLook()
            if load.isIdle, setup.rateLimiter?.isLimiting == true { load = .unknown }
            for _ in 0..<growth.judge(rate: rate, helpers: helpers, limit: limit, throttled: throttled, cpu: load) { addHelper() }
        }
    }

    private var isStopping: Bool { state.withLock { $0.stopping } }

    // MARK: progress reports

    /// A task: while the connections run, it publishes the download's progress at the promised
    /// interval, whichever connection writes (the runner's connection may be held back by a speed
    /// limit, or done with its part, while the others go on). Its waits hold no thread.
    func reportProgress() async {
        defer { figures.segmentsReport(false) }
        while !isStopping {
            let wait = figures.secondsUntilProgress
            if wait > 0 {
                await changes.waitAsync(timeout: wait) { [self] in isStopping }
                continue
            }
            guard figures.tick().progress else { continue }
            // Counted in `inFlight`: once the connections stop (and the runner says paused or
            // ended), no report of theirs comes after.
            guard beginInFlight() else { return }
            report(progress(figures: figures, connected: true))
            endInFlight()
        }
    }

    /// The download's progress now: the runner's prefix and every segment, over the connections
    /// fetching (none for a stop's figures: `connected` false).
    func progress(figures: RunFigures, connected: Bool, final: Bool = false) -> DownloadProgress {
        let (prefix, mainEnd, segments, helpers) = state.withLock { ($0.mainNext, $0.mainEnd, $0.table.segments, $0.helpers) }
        let bytes = prefix + segments.reduce(0) { $0 + ($1.next - $1.begin) }
        let connections = connected ? helpers + (prefix < mainEnd ? 1 : 0) : 0
        return figures.progress(
            bytes: bytes, total: setup.total, connections: connections, segments: [Segment(begin: 0, next: prefix, end: mainEnd)] + segments,
            final: final)
    }

    /// `body` (a sync, a record save) on a pool thread, counted in `inFlight`; skipped once the
    /// connections are stopping.
    private func offThread(_ body: () -> Void) async {
        guard beginInFlight() else { return }
        await BlockingWork.run(body)
        endInFlight()
    }

    /// Drops the connections `SlowConnectionWatch` finds far behind the others.
    func dropSlowConnections(_ watch: inout SlowConnectionWatch) {
        let positions = state.withLock { state in
            state.table.owned.map { (index: $0, segment: state.table.segments[$0]) }
                .filter { !$0.segment.isDone }
                .map { (index: $0.index, next: $0.segment.next) }
        }
        let dropped = watch.observe(positions, limited: setup.rateLimiter?.isLimiting == true)
        guard !dropped.isEmpty else { return }
        state.withLock { state in
            for index in dropped { state.dropped.insert(index) }
        }
    }

    /// Data first, then the record that claims it.
    func checkpoint() throws(StoreError) {
        let (prefix, segments, caps) = state.withLock { ($0.mainNext, $0.table.segments, $0.connectionCaps) }
        try file.syncData()
        try saveRecord(prefix, segments, true, caps)
    }

    /// A checkpoint from the monitor: a failure stops every connection and is reported by the
    /// runner when it joins them.
    func checkpointRecordingFailure() {
        do {
            try checkpoint()
        } catch {
            stop(failing: error)
        }
    }

    /// The progress as written (not yet synced), trusted only within this boot.
    func recordProgress() {
        let (prefix, segments, caps) = state.withLock { ($0.mainNext, $0.table.segments, $0.connectionCaps) }
        do {
            try saveRecord(prefix, segments, false, caps)
        } catch {
            stop(failing: error)
        }
    }

    /// Stops every connection because a write, sync or record save failed.
    func stop(failing error: StoreError) {
        state.withLock { $0.stop(failing: error) }
        changes.notify()
    }
}
