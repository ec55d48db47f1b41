/// Speed and time-left estimation from byte counts over time. Pure: the caller supplies the clock.
///
/// A speed is measured over `minimumSpan` at least, and there is none before: over a few
/// milliseconds, the bytes that waited in the socket when the body started make any figure absurd
/// (hundreds of MiB/s from a server sending 1 MB/s). The end of a run is the exception: its last
/// figure covers every byte it received, however short it was (`bytesPerSecond(final:)`).
package struct ProgressMeter: Sendable {
    /// Seconds a speed is measured over, at least; until the samples span as much, there is none.
    package static let minimumSpan = 1.0
    /// Seconds of history the speed reflects.
    package var window: Double
    private var samples: [(time: Double, bytes: Int64)] = []

    /// A meter whose speed reflects the last `window` seconds.
    package init(window: Double = 3.0) {
        self.window = window
    }

    /// Records that `bytes` (a running total of this session) were reached at `time` (seconds, monotonic).
    package mutating func record(bytes: Int64, at time: Double) {
        samples.append((time, bytes))
        while samples.count > 2, let first = samples.first, time - first.time > window {
            samples.removeFirst()
        }
    }

    /// Bytes per second over the window; 0 (none) until the samples span `minimumSpan`.
    package var bytesPerSecond: Double { bytesPerSecond(final: false) }

    /// Bytes per second over the window; `final`: the last figure of a run, measured over
    /// whatever span its samples have (a run shorter than `minimumSpan` still has a speed). 0
    /// (none) before two samples, or before `minimumSpan` unless `final`.
    package func bytesPerSecond(final: Bool) -> Double {
        guard let first = samples.first, let last = samples.last, last.time > first.time else { return 0 }
        let span = last.time - first.time
        guard final || span >= Self.minimumSpan else { return 0 }
        return Double(last.bytes - first.bytes) / span
    }

    /// A measured speed (bytes over seconds, a `Double`) as a whole number of bytes per second,
    /// for an answer or a line of text: never traps, whatever the value (NaN and negatives are
    /// 0, anything beyond `Int64` is `Int64.max`; a speed read back from a damaged store can be
    /// anything). A measured speed has no exact integer to keep; a limit does, and is never
    /// converted this way (`RateLimiter.bytesPerSecond`).
    package static func wholeBytesPerSecond(_ measured: Double) -> Int64 {
        guard measured.isFinite else { return measured == .infinity ? Int64.max : 0 }
        guard measured > 0 else { return 0 }
        // Int64.max is no Double; 2^63, the first Double beyond it, is where saturation starts.
        guard measured < 9_223_372_036_854_775_808.0 else { return Int64.max }
        return Int64(measured)
    }

    /// Seconds left at the current speed (`final`: the run's last figure), when the remaining
    /// byte count is known and there is a speed.
    package func secondsLeft(remaining: Int64?, final: Bool = false) -> Double? {
        guard let remaining, remaining >= 0 else { return nil }
        let speed = bytesPerSecond(final: final)
        guard speed > 0 else { return remaining == 0 ? 0 : nil }
        return Double(remaining) / speed
    }
}
