import Foundation
import HaulCore
import Synchronization

/// The queue on PostgreSQL, shared by a fleet of machines: each runs `haul queue run` (or
/// `haul serve`) on the same database, and every item is downloaded by one of them at a time.
///
/// The protocol of a work table on a real engine (River, Oban, Que): a claim is one statement
/// (`WITH … FOR UPDATE SKIP LOCKED … UPDATE … RETURNING`) that leases the best queued item to a
/// named worker (host, boot id, PID) under a new epoch; the worker renews its leases by heartbeat;
/// each write it makes for the item names the epoch (`WHERE id = $1 AND lease_epoch = $2`), so a
/// worker stopped past its lease can never change an item another worker now holds; expired leases
/// go back to the queue. Lease times are the server's clock (`now()`), never a worker's.
package final class PostgresQueueStore: Sendable {
    /// The connection URI without its password, for messages.
    package let location: String
    /// Seconds a lease lasts without renewal (`HAUL_LEASE_SECONDS`, else 20).
    package let leaseSeconds: Double
    let database: PGDatabase
    let listener: PostgresListener
    /// This machine's name, the first part of a worker's name.
    let hostName: String
    /// When a claim looks for expired leases: on the first, then at most every second.
    let recoveryThrottle = Mutex(RecoveryThrottle(interval: .seconds(1)))

    /// Whether `state` names a PostgreSQL database (a `postgresql://` or `postgres://` URI) rather
    /// than a state directory.
    package static func isConnectionURI(_ state: String) -> Bool {
        let lowered = state.lowercased()
        return lowered.hasPrefix("postgresql://") || lowered.hasPrefix("postgres://")
    }

    /// Connects to the database at `uri` (a libpq connection URI) and brings its schema up to date.
    /// `reconnectSeconds`: how long an operation keeps reconnecting (with backoff) when the server
    /// is gone before it fails with `.unavailable` (`HAUL_PG_RECONNECT_SECONDS`, else 60).
    package init(uri: String, leaseSeconds: Double = LeaseDuration.fromEnvironment, reconnectSeconds: Double? = nil) throws(StoreError) {
        location = Redaction.withoutPassword(uri)
        self.leaseSeconds = leaseSeconds
        let environment = ProcessInfo.processInfo.environment
        let patience = reconnectSeconds ?? environment["HAUL_PG_RECONNECT_SECONDS"].flatMap(Double.init) ?? 60
        hostName = ProcessInfo.processInfo.hostName
        do {
            database = try PGDatabase(conninfo: uri, reconnectSeconds: patience)
        } catch {
            throw StoreError(.unavailable, "the queue database \(Redaction.withoutPassword(uri)): \(error.message)")
        }
        listener = PostgresListener(conninfo: uri)
        try Self.migrate(database, location: location)
    }

    // MARK: plumbing

    /// Runs `body` in one transaction (run again as a whole after a lost connection or a deadlock).
    func transaction<T>(_ body: (PGConnection) throws -> T) throws(StoreError) -> T {
        do {
            return try database.transaction(body)
        } catch {
            throw storeError(error)
        }
    }

    func storeError(_ error: any Error) -> StoreError {
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

    static func load(_ db: PGConnection, id: Int64, locking: Bool = false) throws -> StoredDownload? {
        try db.query("SELECT * FROM downloads WHERE id = $1" + (locking ? " FOR UPDATE" : ""), [String(id)]).rows.first.map(decode)
    }

    static func decode(_ row: Row) throws -> StoredDownload {
        try StoredDownload(row: row)
    }

    /// An array parameter (`$n::bigint[]`), nil for none.
    static func idArray(_ ids: Set<Int64>?) -> String? {
        ids.map { "{" + $0.sorted().map(String.init).joined(separator: ",") + "}" }
    }

    /// The worker's name as other machines see it: host, boot id, PID.
    func workerName(_ owner: LeaseOwner) -> String {
        "\(hostName)/\(owner.bootID)/\(owner.pid)"
    }

    /// The transfer states, as an SQL list.
    static let transferStates = DownloadState.allCases.filter(\.hasTransfer).map { "'\($0.rawValue)'" }.joined(separator: ", ")
}
