/// A token bucket that goes into debt: taking more than is there is allowed, and the debt is the
/// wait. Over any long period the bytes taken never exceed `rate` per second plus one `burst`. Pure:
/// the caller supplies the clock.
package struct TokenBucket: Sendable, Equatable {
    /// Bytes per second.
    package let rate: Double
    /// Bytes that may pass at once after an idle period.
    package let burst: Double
    private var tokens: Double
    private var last: Double?

    /// A bucket of `rate` bytes per second (at least 1), empty at the start; `burst` defaults to
    /// a twentieth of a second's worth, at least 16 KiB.
    package init(rate: Double, burst: Double? = nil) {
        self.rate = max(1, rate)
        self.burst = burst ?? max(16 * 1024, rate / 20)
        tokens = 0
    }

    /// Takes `bytes` at time `now` (seconds, monotonic); returns how long to wait before going on.
    package mutating func take(_ bytes: Int, now: Double) -> Double {
        if let last {
            tokens = min(burst, tokens + (now - last) * rate)
        }
        last = now
        tokens -= Double(bytes)
        return tokens >= 0 ? 0 : -tokens / rate
    }

    /// How long from `now` until the debt is paid, taking nothing: what a transfer that may not
    /// block asks before it takes a chunk (it pauses for that long instead of waiting after it).
    package func wait(now: Double) -> Double {
        var tokens = tokens
        if let last {
            tokens = min(burst, tokens + (now - last) * rate)
        }
        return tokens >= 0 ? 0 : -tokens / rate
    }
}
