import Foundation
import HaulCore
import HaulStore
import Synchronization

/// The figures of one run: its clock, the bytes every one of its connections received, the speed
/// meter, and the pacer of progress reports and checkpoints. The run's one owner of them: the
/// runner's connection reports its bytes on the event loop, the segment connections theirs, and
/// whoever reports progress (the runner's reporter, the segments' while they run) asks it whether
/// a report is due, on a clock of its own: so the figures are the whole download's whoever
/// writes, and come at the interval whether or not anyone writes (a limit may hold every
/// connection back for seconds).
final class RunFigures: Sendable {
    private struct State {
        /// Body bytes every connection of this run received (overlap included).
        var bytesTransferred: Int64 = 0
        var meter = ProgressMeter()
        var pacer: CheckpointPacer
        /// The runner's connection's file as it last wrote (bytes on disk, total when known):
        /// nil while no body of its flows.
        var written: (bytes: Int64, total: Int64?)?
        /// Whether the segments' reporter publishes the progress (while segments run).
        var segmentsReport = false
    }

    private let clock = ContinuousClock()
    private let startedAt: ContinuousClock.Instant
    private let state: Mutex<State>
    /// Bytes of the file on disk when this run started, for the completion.
    private let resumed = Mutex<Int64>(0)

    init(_ request: DownloadRequest) {
        startedAt = clock.now
        state = Mutex(
            State(pacer: CheckpointPacer(progressInterval: request.progressInterval, checkpointInterval: request.checkpointInterval, start: 0)))
    }

    /// Bytes of the file on disk when this run started, for the completion.
    var resumedFrom: Int64 {
        get { resumed.withLock { $0 } }
        set { resumed.withLock { $0 = newValue } }
    }

    /// Seconds since the run started, for the meter and the pacer.
    var elapsedSeconds: Double {
        (clock.now - startedAt).inSeconds
    }

    /// Body bytes every connection of this run received: what speed, ETA and the summary count.
    var bytesTransferred: Int64 { state.withLock { $0.bytesTransferred } }

    /// Body bytes one of the run's connections received.
    func received(_ count: Int) {
        state.withLock { $0.bytesTransferred += Int64(count) }
    }

    /// A sample for the meter of the bytes received so far.
    func sample() {
        let now = elapsedSeconds
        state.withLock { $0.meter.record(bytes: $0.bytesTransferred, at: now) }
    }

    /// Whether a progress report (with a sample for the meter) and a checkpoint are due now.
    func tick() -> (progress: Bool, checkpoint: Bool) {
        let now = elapsedSeconds
        return state.withLock { state in
            let due = state.pacer.tick(now: now)
            if due.progress { state.meter.record(bytes: state.bytesTransferred, at: now) }
            return due
        }
    }

    /// The runner's connection wrote: `bytes` on disk now, of `total` when known. Its reporter
    /// (`reportWhileConnected`) publishes them at the interval, whether or not it writes again.
    /// Returns whether a checkpoint is due (at most every checkpoint interval): one look per
    /// chunk, on the event loop.
    func wrote(bytes: Int64, total: Int64?) -> Bool {
        let now = elapsedSeconds
        return state.withLock { state in
            state.written = (bytes, total)
            return state.pacer.checkpointDue(now: now)
        }
    }

    /// The segments' reporter publishes the download's progress (`true`) or no longer does.
    func segmentsReport(_ reporting: Bool) {
        state.withLock { $0.segmentsReport = reporting }
    }

    /// A new attempt of the runner's connection begins: nothing of it is written yet. Called
    /// before its reporter starts (a task may start late, after the first writes).
    func connectionStarts() {
        state.withLock { $0.written = nil }
    }

    /// Reports while the runner's connection fetches, until the registration returned is stopped
    /// (after which nothing more is published): the download's progress at the promised interval,
    /// from what the connection last wrote, whether or not it writes meanwhile: a speed limit may
    /// hold it back for seconds, and the figures (the speed falling, the time left) must not stand
    /// still. Silent before the first write and while the segments' reporter publishes. Looked at
    /// by the process's `FiguresTicker` (a report is at most one tick late), not by a task of its own.
    func reportWhileConnected(_ publish: @escaping @Sendable (DownloadProgress) -> Void) -> ConnectionReport {
        ConnectionReport(figures: self, registration: FiguresTicker.shared.register { [self] in look(publish) })
    }

    /// One look of the connection's reporter: publishes the progress if a report is due.
    private func look(_ publish: (DownloadProgress) -> Void) {
        let now = elapsedSeconds
        let due = state.withLock { state -> (bytes: Int64, total: Int64?)? in
            // Nothing of its own to report (no byte yet, or the segments report): the pacer is
            // not ticked, so it says a report is due at the first look after a write.
            guard !state.segmentsReport, let written = state.written, state.pacer.tick(now: now).progress else { return nil }
            state.meter.record(bytes: state.bytesTransferred, at: now)
            return written
        }
        if let due { publish(progress(bytes: due.bytes, total: due.total, connections: 1, segments: nil)) }
    }

    /// The connection is no longer fetching: its figures are no longer its to report.
    fileprivate func connectionEnded() {
        state.withLock { $0.written = nil }
    }

    /// Seconds until the next progress report is due (0: now).
    var secondsUntilProgress: Double {
        let now = elapsedSeconds
        return state.withLock { $0.pacer.secondsUntilProgress(now: now) }
    }

    /// A checkpoint was taken now.
    func checkpointed() {
        let now = elapsedSeconds
        state.withLock { $0.pacer.checkpointed(at: now) }
    }

    /// The download's progress: `bytes` on disk of `total`, over `connections` connections (and
    /// their `segments`, for a segmented download), at the speed measured so far (`final`: the
    /// run's last figures, whose speed covers the whole run however short).
    func progress(bytes: Int64, total: Int64?, connections: Int, segments: [Segment]?, final: Bool = false) -> DownloadProgress {
        let remaining = total.map { max(0, $0 - bytes) }
        let (speed, left) = state.withLock {
            ($0.meter.bytesPerSecond(final: final), $0.meter.secondsLeft(remaining: remaining, final: final))
        }
        var progress = DownloadProgress(bytes: bytes, totalBytes: total, bytesPerSecond: speed, secondsLeft: left)
        progress.segments = segments
        progress.connections = connections
        return progress
    }

    /// The progress of `output` now, with the segment connections' bytes and ranges while they run;
    /// `connected`: whether the run's connections are fetching (false for a stop's or the end's figures).
    func progress(_ output: PartialDownload, segments: SegmentCoordinator?, connected: Bool, final: Bool = false) -> DownloadProgress {
        if let segments { return segments.progress(figures: self, connected: connected, final: final) }
        // A finished file in place (the same request again) is its own whole.
        let total = output.record.finalLength ?? (output.alreadyInPlace ? output.sink.prefixLength : nil)
        return progress(bytes: output.sink.prefixLength, total: total, connections: connected ? 1 : 0, segments: nil, final: final)
    }
}

/// The reporting of one attempt of the runner's connection (`RunFigures.reportWhileConnected`).
struct ConnectionReport: Sendable {
    fileprivate let figures: RunFigures
    fileprivate let registration: FiguresTicker.Registration

    /// Ends the reports: once it returns, none is published any more.
    func stop() {
        registration.stop()
        figures.connectionEnded()
    }
}
