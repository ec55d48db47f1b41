import Foundation

// Forgetting removed secrets: the earlier versions of a scrubbed (or deleted) row stay in the
// write-ahead log until it is checkpointed and truncated.
extension QueueStore {
    /// Truncates the write-ahead log now, so no earlier copy of a removed secret stays in it (a
    /// command that just cancelled or removed a download, the end of a run). Best effort: another
    /// process reading the store can keep the log from shrinking; a long run tries again.
    package func forgetRemovedSecrets() {
        let now = ContinuousClock.now
        let pending = secretsToForget.withLock { $0.take(now: now) }
        if !truncateWriteAheadLog() {
            secretsToForget.withLock { $0.failed(pending) }
        }
    }

    /// Truncates the write-ahead log if a commit removed secrets since the last truncation, at most
    /// once every `SecretsToForget.interval` (a run settling many downloads truncates once for
    /// many). A long-running run calls this after each settlement and every few seconds, so a
    /// secret leaves the files within seconds of its download settling, not when the run ends.
    package func forgetRemovedSecretsSoon() {
        let now = ContinuousClock.now
        guard secretsToForget.withLock({ $0.takeIfDue(now: now) }) else { return }
        if !truncateWriteAheadLog() {
            secretsToForget.withLock { $0.failed(true) }
        }
    }

    /// A commit removed secrets (a scrub, a deleted row): the log holds their earlier copies.
    func noteSecretsRemoved() {
        secretsToForget.withLock { $0.pending = true }
    }
}

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
