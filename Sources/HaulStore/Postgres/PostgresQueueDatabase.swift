import Foundation
import HaulCore

/// The queue's PostgreSQL database, shared by a fleet of machines: each runs `haul queue run` (or
/// `haul serve`) on it, and every item is downloaded by one of them at a time. Lease times are the
/// server's clock (`now()`), never a worker's; idle workers wake on `NOTIFY haul_queue`.
final class PostgresQueueDatabase: QueueDatabase {
    let location: String
    private let database: PGDatabase
    private let listener: PostgresListener
    /// This machine's name, the first part of a worker's name.
    private let hostName = ProcessInfo.processInfo.hostName

    var isShared: Bool { true }
    var dialect: QueueDialect { .postgres }

    /// Whether `state` names a PostgreSQL database (a `postgresql://` or `postgres://` URI) rather
    /// than a state directory.
    static func isConnectionURI(_ state: String) -> Bool {
        let lowered = state.lowercased()
        return lowered.hasPrefix("postgresql://") || lowered.hasPrefix("postgres://")
    }

    /// Connects to the database at `uri` (a libpq connection URI) and brings its schema up to date.
    /// `reconnectSeconds`: how long an operation keeps reconnecting (with backoff) when the server
    /// is gone before it fails with `.unavailable`.
    init(uri: String, reconnectSeconds: Double) throws(StoreError) {
        location = Redaction.withoutPassword(uri)
        do {
            database = try PGDatabase(conninfo: uri, reconnectSeconds: reconnectSeconds)
        } catch {
            throw StoreError(.unavailable, "the queue database \(location): \(error.message)")
        }
        listener = PostgresListener(conninfo: uri)
        do {
            try database.withConnection { db in try QueueDialect.postgres.migrator.migrate(db) }
        } catch let error as StoreError {
            throw error
        } catch let error as MigrationError {
            throw StoreError(.corruptStore, error.description)
        } catch let error as PGError where error.isServerUnavailable {
            throw StoreError(.unavailable, "the queue database \(location) cannot be reached: \(error.message)")
        } catch {
            throw StoreError(.corruptStore, "the queue database \(location) cannot be migrated: \(error)")
        }
    }

    func transaction<T: Sendable>(durable: Bool, _ body: (any StoreConnection, _ rerun: Bool) throws -> T) throws(StoreError) -> T {
        do {
            return try database.transaction { db, rerun in try body(db, rerun) }
        } catch {
            throw storeError(error)
        }
    }

    func read<T: Sendable>(_ body: (any StoreConnection) throws -> T) throws(StoreError) -> T {
        try transaction(durable: false) { db, _ in try body(db) }
    }

    /// Only when the connection is up and free: a transfer never waits for the database on
    /// account of its progress (a report is due every second anyway).
    func transactionIfIdle<T: Sendable>(_ body: (any StoreConnection) throws -> T) throws(StoreError) -> T? {
        do {
            return try database.transactionIfIdle { db in try body(db) }
        } catch {
            throw storeError(error)
        }
    }

    /// The worker's name as other machines see it: host, boot id, PID.
    func workerName(_ owner: LeaseOwner) -> String {
        "\(hostName)/\(owner.bootID)/\(owner.pid)"
    }

    /// Waits for a `NOTIFY` on `haul_queue` (an item became queued on any machine), `seconds` at most.
    func waitForWork(seconds: Double) {
        listener.wait(seconds: seconds)
    }

    func wakeWaiters() {
        listener.wakeAll()
    }

    /// Nothing to forget: the store never receives a secret (see `SharedStoreRule`).
    func noteSecretsRemoved() {}

    /// Nothing to truncate (see `noteSecretsRemoved`).
    func forgetRemovedSecrets(soon: Bool) {}

    private func storeError(_ error: any Error) -> StoreError {
        switch error {
        case let error as StoreError:
            return error
        case let error as PGError where error.isServerUnavailable:
            return StoreError(.unavailable, "the queue database \(location) cannot be reached: \(error.message)")
        case let error as PGError:
            return StoreError(.io, "queue database \(location): \(error.description)")
        default:
            return StoreError(.io, "queue database \(location): \(error)")
        }
    }
}
