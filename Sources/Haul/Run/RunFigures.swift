import Foundation
import HaulCore
import HaulStore

/// The figures of one run: its clock, the bytes its connections received, the speed meter, and
/// the pacer of progress reports and checkpoints.
struct RunFigures {
    private let clock = ContinuousClock()
    private let startedAt: ContinuousClock.Instant
    /// Bytes of the file on disk when this run started, for the completion.
    var resumedFrom: Int64 = 0
    /// Body bytes this run's own connection received (overlap included).
    private(set) var bytesTransferred: Int64 = 0
    private(set) var meter = ProgressMeter()
    private var pacer: CheckpointPacer

    init(_ request: DownloadRequest) {
        startedAt = clock.now
        pacer = CheckpointPacer(progressInterval: request.progressInterval, checkpointInterval: request.checkpointInterval, start: 0)
    }

    /// Seconds since the run started, for the meter and the pacer.
    var elapsedSeconds: Double {
        (clock.now - startedAt).inSeconds
    }

    /// Body bytes of the run's own connection.
    mutating func received(_ count: Int) {
        bytesTransferred += Int64(count)
    }

    /// A sample for the meter: `total` bytes received by every connection so far.
    mutating func sample(total: Int64) {
        meter.record(bytes: total, at: elapsedSeconds)
    }

    /// Whether a progress report (with a sample of `total`) and a checkpoint are due now.
    mutating func tick(total: Int64) -> (progress: Bool, checkpoint: Bool) {
        let now = elapsedSeconds
        let due = pacer.tick(now: now)
        if due.progress { meter.record(bytes: total, at: now) }
        return due
    }

    /// A checkpoint was taken now.
    mutating func checkpointed() {
        pacer.checkpointed(at: elapsedSeconds)
    }
}

extension RunFigures {
    /// The progress of `output` now, with the segment connections' bytes and ranges while they run.
    func progress(_ output: PartialDownload, segments: SegmentCoordinator?) -> DownloadProgress {
        let total = output.record.finalLength
        let bytes = output.sink.prefixLength + (segments?.segmentBytes ?? 0)
        let remaining = total.map { max(0, $0 - bytes) }
        var progress = DownloadProgress(
            bytes: bytes, totalBytes: total, bytesPerSecond: meter.bytesPerSecond, secondsLeft: meter.secondsLeft(remaining: remaining))
        progress.segments = segments.map { [Segment(begin: 0, next: output.sink.prefixLength, end: $0.mainEnd)] + $0.segments }
        return progress
    }
}
