/// When a claim also returns the items of dead owners to where they meant to go (the SQLite
/// store's `recoverAbandoned`, the PostgreSQL store's `recoverExpired`): on the store's first
/// claim, then at most once per `interval`, however often workers claim. Looking costs a scan
/// of the running items, and an owner is presumed dead only after a lease of many seconds.
///
/// Pure: each store keeps one in a `Mutex` and passes the time in. A monotonic clock, so that a
/// wall clock set back cannot hold recovery off.
struct RecoveryThrottle: Equatable {
    /// The shortest time between two recoveries.
    let interval: Duration
    /// When the latest recovery was due; nil before the first claim.
    private(set) var recoveredAt: ContinuousClock.Instant?

    /// A throttle that lets the first claim recover, then one claim per `interval`.
    init(interval: Duration) {
        self.interval = interval
    }

    /// Whether the claim made at `now` should recover: none has yet, or the latest is at least
    /// `interval` old. When it should, that counts as the latest recovery.
    mutating func takeIfDue(now: ContinuousClock.Instant) -> Bool {
        if let recoveredAt, now - recoveredAt < interval { return false }
        recoveredAt = now
        return true
    }
}
