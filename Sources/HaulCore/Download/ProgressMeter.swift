/// Speed and time-left estimation from byte counts over time. Pure: the caller supplies the clock.
public struct ProgressMeter: Sendable {
    /// Seconds of history the speed reflects.
    public var window: Double
    private var samples: [(time: Double, bytes: Int64)] = []

    /// A meter whose speed reflects the last `window` seconds.
    public init(window: Double = 3.0) {
        self.window = window
    }

    /// Records that `bytes` (a running total of this session) were reached at `time` (seconds, monotonic).
    public mutating func record(bytes: Int64, at time: Double) {
        samples.append((time, bytes))
        while samples.count > 2, let first = samples.first, time - first.time > window {
            samples.removeFirst()
        }
    }

    /// Bytes per second over the window; 0 before two samples.
    public var bytesPerSecond: Double {
        guard let first = samples.first, let last = samples.last, last.time > first.time else { return 0 }
        return Double(last.bytes - first.bytes) / (last.time - first.time)
    }

    /// A measured speed (bytes over seconds, a `Double`) as a whole number of bytes per second,
    /// for an answer or a line of text: never traps, whatever the value (NaN and negatives are
    /// 0, anything beyond `Int64` is `Int64.max`; a speed read back from a damaged store can be
    /// anything). A measured speed has no exact integer to keep; a limit does, and is never
    /// converted this way (`RateLimiter.bytesPerSecond`).
    public static func wholeBytesPerSecond(_ measured: Double) -> Int64 {
        guard measured.isFinite else { return measured == .infinity ? Int64.max : 0 }
        guard measured > 0 else { return 0 }
        // Int64.max is no Double; 2^63, the first Double beyond it, is where saturation starts.
        guard measured < 9_223_372_036_854_775_808.0 else { return Int64.max }
        return Int64(measured)
    }

    /// Seconds left at the current speed, when the remaining byte count is known and the speed is not zero.
    public func secondsLeft(remaining: Int64?) -> Double? {
        guard let remaining, remaining >= 0 else { return nil }
        let speed = bytesPerSecond
        guard speed > 0 else { return remaining == 0 ? 0 : nil }
        return Double(remaining) / speed
    }
}
