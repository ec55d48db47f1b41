/// When to publish progress and when to take a durable checkpoint, from the time alone. Pure:
/// times are seconds on any monotonic clock.
package struct CheckpointPacer: Sendable, Equatable {
    /// Seconds between progress reports.
    package let progressInterval: Double
    /// Seconds at least between durable checkpoints.
    package let checkpointInterval: Double
    private var nextProgress: Double
    private var lastCheckpoint: Double

    /// The first progress comes one interval after `start`: a small file finishes before it and
    /// reports its progress once, at the end.
    package init(progressInterval: Double, checkpointInterval: Double, start: Double) {
        self.progressInterval = progressInterval
        self.checkpointInterval = checkpointInterval
        nextProgress = start + progressInterval
        lastCheckpoint = start
    }

    /// What is due at `now`: checkpoints are only considered when progress is due.
    package mutating func tick(now: Double) -> (progress: Bool, checkpoint: Bool) {
        guard now >= nextProgress else { return (false, false) }
        nextProgress = now + progressInterval
        let checkpoint = now - lastCheckpoint >= checkpointInterval
        return (true, checkpoint)
    }

    /// Whether a checkpoint is due at `now`, apart from progress (a connection held back by a
    /// speed limit writes less often than progress is reported).
    package func checkpointDue(now: Double) -> Bool {
        now - lastCheckpoint >= checkpointInterval
    }

    /// Seconds from `now` until the next progress report is due; 0 when it is due.
    package func secondsUntilProgress(now: Double) -> Double {
        max(0, nextProgress - now)
    }

    /// A checkpoint was taken at `now` (by the pacer's tick or any other way).
    package mutating func checkpointed(at now: Double) {
        lastCheckpoint = now
    }
}
