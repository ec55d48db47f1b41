import Foundation
import HaulCore
import HaulStore
import Synchronization

/// The figures of one run: its clock, the bytes every one of its connections received, the speed
/// meter, and the pacer of progress reports and checkpoints. The run's one owner of them: the
/// runner's connection reports its bytes on the event loop, the segment connections theirs, and
/// whoever reports progress (the runner's connection alone, the segments' reporter while they
/// run) asks it whether a report is due; so the figures are the whole download's whoever writes.
final class RunFigures: Sendable {
    private struct State {
        /// Body bytes every connection of this run received (overlap included).
        var bytesTransferred: Int64 = 0
        var meter = ProgressMeter()
        var pacer: CheckpointPacer
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
