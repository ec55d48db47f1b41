import Foundation

/// Whether the write-ahead log may hold copies of removed secrets, and when it was last truncated:
/// the decision of when to truncate again, with no clock of its own.
struct SecretsToForget: Equatable {
    /// At most one truncation per this interval in a long run.
    static let interval: Duration = .seconds(1)

    /// A commit removed secrets since the last truncation.
    var pending = false
    /// When the log was last truncated.
    private(set) var truncatedAt: ContinuousClock.Instant?

    /// Whether a truncation is due at `now`: secrets are pending and the last truncation is at
    /// least `interval` old. When it is, it counts as done (see `failed`).
    mutating func takeIfDue(now: ContinuousClock.Instant) -> Bool {
        guard pending else { return false }
        if let truncatedAt, now - truncatedAt < Self.interval { return false }
        return take(now: now)
    }

    /// A truncation starts at `now`, due or not; returns whether secrets were pending.
    @discardableResult
    mutating func take(now: ContinuousClock.Instant) -> Bool {
        defer {
            pending = false
            truncatedAt = now
        }
        return pending
    }

    /// The truncation did not complete: what was pending still is.
    mutating func failed(_ wasPending: Bool) {
        pending = pending || wasPending
    }
}
