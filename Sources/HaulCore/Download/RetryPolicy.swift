/// When to try again after a transient failure, and how long to wait first. Pure.
public struct RetryPolicy: Sendable, Equatable {
    /// Retries after the first attempt; 0 disables retrying.
    public var maxRetries: Int
    /// The first wait, doubled for each further retry.
    public var baseDelay: Double
    /// No wait is longer than this, except what a server's Retry-After asks for (itself capped).
    public var maxDelay: Double

    /// A policy of `maxRetries` retries, waiting `baseDelay` seconds first, doubled up to `maxDelay`.
    public init(maxRetries: Int = 5, baseDelay: Double = 1, maxDelay: Double = 60) {
        self.maxRetries = maxRetries
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
    }

    /// The wait before retry number `retry` (1-based); a server's Retry-After wins when it asks for longer,
    /// up to 10 minutes.
    package func delay(forRetry retry: Int, retryAfter: Double? = nil) -> Double {
        let exponent = Double(max(0, min(retry - 1, 30)))
        let backoff = min(maxDelay, baseDelay * pow2(exponent))
        guard let retryAfter else { return backoff }
        return max(backoff, min(retryAfter, 600))
    }

    /// Whether an HTTP status is worth retrying: the server may answer differently later.
    package static func isRetryable(status: Int) -> Bool {
        [408, 425, 429, 500, 502, 503, 504].contains(status)
    }

    private func pow2(_ exponent: Double) -> Double {
        var result = 1.0
        for _ in 0..<Int(exponent) { result *= 2 }
        return result
    }
}
