import HaulCore

/// A queue database as the queue's logic (`QueueStore`) uses it: transactions on a
/// `StoreConnection`, and what only one kind of database does (its clock for a lease, waking idle
/// workers, forgetting removed secrets). `SQLiteQueueDatabase` (one machine) and
/// `PostgresQueueDatabase` (a fleet) are the two; what they run is in their `QueueDialect`.
package protocol QueueDatabase: Sendable {
    /// Where the database is, for messages: a file, or a PostgreSQL URI without password.
    var location: String { get }
    /// Whether machines other than this one use it (see `QueueStorage.isShared`).
    var isShared: Bool { get }
    /// The statements of this database.
    var dialect: QueueDialect { get }

    /// Runs `body` in one transaction: committed if it returns, rolled back if it throws. A
    /// database that runs a transaction again after its connection was lost (its COMMIT may have
    /// reached the server) says so with `rerun`. `durable`: on the disk when this returns.
    func transaction<T: Sendable>(durable: Bool, _ body: (any StoreConnection, _ rerun: Bool) throws -> T) throws(StoreError) -> T
    /// Runs `body`, which only reads, with the database's reading rules (SQLite: no write lock
    /// taken; PostgreSQL: a transaction).
    func read<T: Sendable>(_ body: (any StoreConnection) throws -> T) throws(StoreError) -> T
    /// Runs `body` in a transaction only if the database is free right now; nil when it is not
    /// (for writes worth nothing later, like progress: never waited for).
    func transactionIfIdle<T: Sendable>(_ body: (any StoreConnection) throws -> T) throws(StoreError) -> T?
    /// The name of `owner` as other machines see it.
    func workerName(_ owner: LeaseOwner) -> String

    /// Blocks until work may have appeared, `seconds` at most (see `QueueStorage.waitForWork`).
    func waitForWork(seconds: Double)
    /// Ends every `waitForWork` of this process now.
    func wakeWaiters()
    /// A commit removed secrets: their earlier copies may stay in the database's files.
    func noteSecretsRemoved()
    /// Makes sure no earlier copy of a removed secret stays in the files, now (`soon`: at most
    /// about once a second).
    func forgetRemovedSecrets(soon: Bool)
}

extension QueueDatabase {
    /// A transaction whose reruns are of no interest to `body`.
    package func write<T: Sendable>(durable: Bool = false, _ body: (any StoreConnection) throws -> T) throws(StoreError) -> T {
        try transaction(durable: durable) { db, _ in try body(db) }
    }
}
