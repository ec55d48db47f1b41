/// The one rule for spending retries, kept by the first connection (through `DownloadMachine`)
/// and by each segment connection: a retryable failure takes one retry and waits as the policy
/// says; a connection that got bytes to disk since its last failure made progress, so its budget
/// starts afresh; when the budget is spent, the failure stands. Pure.
package struct RetryBudget: Sendable, Equatable {
    /// How many retries, and the waits between them.
    package let policy: RetryPolicy
    /// Retries taken since the last progress.
    package private(set) var used = 0

    /// A budget of `policy.maxRetries` retries, none taken yet.
    package init(_ policy: RetryPolicy) {
        self.policy = policy
    }

    /// Bytes reached the disk: the budget starts afresh.
    package mutating func renew() {
        used = 0
    }

    /// A retry granted: which one it is, of how many, and the seconds to wait first.
    package struct Retry: Sendable, Equatable {
        /// 1 for the first retry since the last progress.
        package var attempt: Int
        /// The retries allowed.
        package var of: Int
        /// Seconds to wait before trying again.
        package var delay: Double
    }

    /// After a failure: the retry to make, or nil when the failure stands (not retryable, or the
    /// budget is spent).
    /// - Parameters:
    ///   - progressed: body bytes reached the disk since the previous failure (they renew the budget first).
    ///   - retryAfter: the seconds the server asked to wait (Retry-After).
    ///   - maxDelay: a cap on the wait below the policy's own (segment connections wait at most 2 s:
    ///     the other connections carry on meanwhile).
    package mutating func spend(retryable: Bool, progressed: Bool, retryAfter: Double? = nil, maxDelay: Double? = nil) -> Retry? {
        if progressed { renew() }
        guard retryable, used < policy.maxRetries else { return nil }
        used += 1
        var delay = policy.delay(forRetry: used, retryAfter: retryAfter)
        if let maxDelay { delay = min(delay, maxDelay) }
        return Retry(attempt: used, of: policy.maxRetries, delay: delay)
    }
}
