/// How long to wait before trying again a step that SQLite fails with `SQLITE_BUSY` at once,
/// without calling the busy handler: switching a new database to write-ahead logging needs an
/// exclusive lock that SQLite does not wait for (waiting there could deadlock two connections).
///
/// The waits start short (another process's setup takes milliseconds), double up to `maximum`,
/// and stop once together they would pass `budget`, the time a busy handler would have waited.
/// A value with no clock: the caller sleeps each delay, and a test reads them.
struct BusyBackoff: Equatable {
    /// Milliseconds all the waits may add up to.
    let budget: Int
    /// The longest single wait, in milliseconds.
    let maximum: Int
    /// Milliseconds waited so far.
    private(set) var waited = 0
    private var next: Int

    /// Waits that begin at `first` ms and double up to `maximum` ms, `budget` ms in all.
    init(budget: Int, first: Int = 1, maximum: Int = 64) {
        self.budget = max(0, budget)
        self.maximum = max(1, maximum)
        next = min(max(1, first), self.maximum)
    }

    /// The next wait in milliseconds, or nil when the budget is spent: then the failure stands.
    mutating func nextDelay() -> Int? {
        guard waited < budget else { return nil }
        let delay = min(next, budget - waited)
        waited += delay
        next = min(next * 2, maximum)
        return delay
    }
}
