import Foundation

/// Where a download is, as a UI shows it: one value with everything a progress view binds to,
/// folded from the download's events (`DownloadSnapshot.folding(_:)`).
public struct DownloadSnapshot: Sendable, Equatable {
    /// The stage a UI names.
    public enum Phase: String, Sendable, Equatable {
        /// Not started yet, or between attempts before its first byte.
        case waiting
        /// Bytes are moving.
        case running
        /// Stopped at a checkpoint; `resume()` continues it.
        case paused
        /// The file is complete and in place.
        case completed
        /// It ended with an error (`error`).
        case failed
        /// It was cancelled.
        case cancelled
    }

    /// The stage it is in.
    public var phase: Phase = .waiting
    /// Bytes of the file on disk (a resumed download counts what earlier runs left).
    public var bytes: Int64 = 0
    /// The file's size, when known.
    public var totalBytes: Int64?
    /// The current speed (0 while nothing moves).
    public var bytesPerSecond: Double = 0
    /// Seconds left at the current speed, when the size is known.
    public var secondsLeft: Double?
    /// The completion, once complete.
    public var completion: DownloadCompletion?
    /// The failure, once failed.
    public var error: DownloadError?
    /// The last retry's or restart's reason, for a status line.
    public var note: String?

    /// A download that has not started.
    public init() {}

    /// `bytes` of `totalBytes`, 0...1; nil while the size is unknown.
    public var fraction: Double? {
        guard let totalBytes, totalBytes > 0 else { return phase == .completed ? 1 : nil }
        return min(1, Double(bytes) / Double(totalBytes))
    }

    /// Whether the download has ended (completed, failed or cancelled).
    public var isFinished: Bool {
        phase == .completed || phase == .failed || phase == .cancelled
    }

    /// This snapshot after `event`.
    public func folding(_ event: DownloadEvent) -> DownloadSnapshot {
        var next = self
        switch event {
        case .started(let started):
            next.phase = .waiting
            next.bytes = started.resumingFrom
        case .response(let info):
            next.phase = .running
            next.totalBytes = info.totalBytes ?? next.totalBytes
        case .progress(let progress):
            next.phase = .running
            next.apply(progress)
        case .paused(let progress):
            next.apply(progress)
            next.phase = .paused
            next.bytesPerSecond = 0
            next.secondsLeft = nil
        case .restarted(let reason):
            next.note = reason.message
        case .retrying(let retry):
            next.note = retry.reason
        case .mirror:
            break
        case .completed(let completion):
            next.phase = .completed
            next.completion = completion
            next.bytes = completion.bytes
            next.totalBytes = completion.bytes
            next.bytesPerSecond = 0
            next.secondsLeft = 0
        case .failed(let error):
            next.phase = .failed
            next.error = error
            next.bytesPerSecond = 0
            next.secondsLeft = nil
        case .cancelled:
            next.phase = .cancelled
            next.bytesPerSecond = 0
            next.secondsLeft = nil
        }
        return next
    }

    private mutating func apply(_ progress: DownloadProgress) {
        bytes = progress.bytes
        totalBytes = progress.totalBytes ?? totalBytes
        bytesPerSecond = progress.bytesPerSecond
        secondsLeft = progress.secondsLeft
    }
}

extension Download {
    /// The download's state as a stream of latest values, for a UI: a late subscriber first gets
    /// the current state; progress is passed on at most every `interval` seconds (a change of
    /// phase at once), and a slow reader gets the newest value, never a backlog
    /// (`bufferingNewest(1)`). It ends after the final state.
    public func snapshots(every interval: Double = 0.25) -> AsyncStream<DownloadSnapshot> {
        let (stream, continuation) = AsyncStream<DownloadSnapshot>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let (missed, events) = hub.subscribeAfterReplay()
        // The current state first, folded from what this subscriber missed.
        var current = DownloadSnapshot()
        for event in missed { current = current.folding(event) }
        continuation.yield(current)
        if current.isFinished {
            continuation.finish()
            return stream
        }
        let initial = current
        let pump = Task {
            var snapshot = initial
            var lastYield: ContinuousClock.Instant? = .now
            for await event in events {
                let next = snapshot.folding(event)
                snapshot = next
                let now = ContinuousClock.now
                if case .progress = event, let last = lastYield, now - last < .milliseconds(Int64(interval * 1000)) { continue }
                lastYield = now
                continuation.yield(next)
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in pump.cancel() }
        return stream
    }
}
