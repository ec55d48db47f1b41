import Foundation
import HaulCore
import HaulJSON
import Synchronization

/// The durable queue: every download Haul manages, its lifecycle state, its lease and its resume
/// record, in one database: SQLite for one machine (`init(directory:)`), PostgreSQL for a fleet
/// (`init(postgres:)`). Its logic is written once here, over the database's `QueueDialect`.
///
/// Every change of state goes through `DownloadLifecycle`, inside a transaction, so two processes
/// (or machines) sharing the store never disagree about where an item is. A claim takes the best
/// queued item and leases it to one owner under a new epoch (a `Lease`); every later write for
/// the item names that lease and is refused once the item was leased again; an item whose lease
/// expired (or, on one machine, whose owner died) goes back to where it meant to go.
package final class QueueStore: QueueStorage {
    /// The SQLite database's file name in a state directory.
    package static let fileName = "haul.sqlite"

    package let leaseSeconds: Double
    let database: any QueueDatabase
    let dialect: QueueDialect
    /// When a claim looks for abandoned items: on the first, then at most every `interval`.
    let recoveryThrottle: Mutex<RecoveryThrottle>

    /// Opens (creating if needed) the SQLite store in `directory`. A file that is not a Haul store
    /// is reported, never overwritten. `leaseSeconds`: `HAUL_LEASE_SECONDS` unless given.
    package convenience init(directory: String, leaseSeconds: Double = LeaseDuration.fromEnvironment) throws(StoreError) {
        self.init(database: try SQLiteQueueDatabase(directory: directory, fileName: Self.fileName), leaseSeconds: leaseSeconds, recoveryInterval: .seconds(2))
    }

    /// Connects to the PostgreSQL database at `uri` (a libpq connection URI) and brings its schema
    /// up to date. `reconnectSeconds`: how long an operation keeps reconnecting (with backoff)
    /// when the server is gone before it fails with `.unavailable` (`HAUL_PG_RECONNECT_SECONDS`,
    /// else 60).
    package convenience init(postgres uri: String, leaseSeconds: Double = LeaseDuration.fromEnvironment, reconnectSeconds: Double? = nil) throws(StoreError) {
        let patience = reconnectSeconds ?? ProcessInfo.processInfo.environment["HAUL_PG_RECONNECT_SECONDS"].flatMap(Double.init) ?? 60
        self.init(database: try PostgresQueueDatabase(uri: uri, reconnectSeconds: patience), leaseSeconds: leaseSeconds, recoveryInterval: .seconds(1))
    }

    private init(database: any QueueDatabase, leaseSeconds: Double, recoveryInterval: Duration) {
        self.database = database
        dialect = database.dialect
        self.leaseSeconds = leaseSeconds
        recoveryThrottle = Mutex(RecoveryThrottle(interval: recoveryInterval))
    }

    /// Whether `state` names a PostgreSQL database (a `postgresql://` or `postgres://` URI) rather
    /// than a state directory.
    package static func isConnectionURI(_ state: String) -> Bool {
        PostgresQueueDatabase.isConnectionURI(state)
    }

    package var location: String { database.location }
    package var isShared: Bool { database.isShared }

    package func forgetRemovedSecrets() {
        database.forgetRemovedSecrets(soon: false)
    }

    package func forgetRemovedSecretsSoon() {
        database.forgetRemovedSecrets(soon: true)
    }

    package func waitForWork(seconds: Double) {
        database.waitForWork(seconds: seconds)
    }

    package func wakeWaiters() {
        database.wakeWaiters()
    }

    // MARK: rows

    func load(_ db: any StoreConnection, id: Int64, locking: Bool = false) throws -> StoredDownload? {
        try db.row(locking ? dialect.loadLocking : dialect.load, [.integer(id)]).map(StoredDownload.init(row:))
    }

    /// Items `ids`, locked until the transaction ends (none read for fewer than two: `load` does
    /// one); a row that cannot be read is left out, for `load` to report.
    func loadLocking(_ db: any StoreConnection, _ ids: [Int64]) throws -> [Int64: StoredDownload] {
        let distinct = Set(ids)
        guard distinct.count > 1 else { return [:] }
        var items: [Int64: StoredDownload] = [:]
        for row in try db.rows(dialect.loadManyLocking, [.integers(distinct.sorted())]) {
            if let item = try? StoredDownload(row: row) { items[item.id] = item }
        }
        return items
    }

    /// A write of a transfer whose lease was lost (the item was leased again, or removed).
    static func leaseLost(_ id: Int64) -> StoreError {
        StoreError(.conflict, "download \(id) is no longer leased to this transfer: it writes nothing more")
    }

    /// The `headers` column: JSON pairs `[[name, value], ...]`.
    static func encodeHeaders(_ fields: [HTTPHeaders.Field]) -> String {
        if fields.isEmpty { return "[]" }
        return JSONValue.array(fields.map { [.string($0.name), .string($0.value)] }).text
    }

    static func decodeRecord(_ text: String?, id: Int64) throws(StoreError) -> ResumeRecord? {
        guard let text else { return nil }
        return try ResumeRecordCodec.decode(Data(text.utf8), "the resume record of download \(id)")
    }
}
