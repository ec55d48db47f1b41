import Foundation
import HaulCore
import HaulJSON
import Synchronization

/// The durable queue: every download Haul manages, its lifecycle state, its lease and its resume
/// record, in one SQLite database (WAL, one serial owner of the connection).
///
/// Every change of state goes through `DownloadLifecycle`, inside a transaction, so two processes
/// sharing the store never disagree about where an item is.
package final class QueueStore: Sendable {
    /// The database file inside the state directory.
    package static let fileName = "haul.sqlite"
    /// Seconds a lease lasts without renewal; an owner that stops renewing is presumed dead.
    /// `HAUL_LEASE_SECONDS` sets it (tests shorten it; at least 1).
    package static let leaseSeconds: Double = LeaseDuration.fromEnvironment

    package let path: String
    private let database: DatabaseQueue
    /// When a claim looks for abandoned items: on the first, then at most every 2 s.
    let recoveryThrottle = Mutex(RecoveryThrottle(interval: .seconds(2)))
    /// Whether removed secrets may still have copies in the write-ahead log (see `forgetRemovedSecretsSoon`).
    let secretsToForget = Mutex(SecretsToForget())
    /// Ends the waits of idle workers (see `waitForWork`).
    let workSignal = WorkSignal()

    /// Opens (creating if needed) the store in `directory`. A file that is not a Haul store is
    /// reported, never overwritten.
    package init(directory: String) throws(StoreError) {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw StoreError(.io, "cannot create the state directory \(directory): \(error.localizedDescription)")
        }
        path = (directory as NSString).appendingPathComponent(Self.fileName)
        do {
            // NORMAL: a power cut may roll back the latest commits, never corrupt the store. Every
            // write here only ever claims less than is durable (data is fdatasync'ed before a record
            // claims it), so a lost commit means re-fetching a little, never trusting torn bytes;
            // a commit that syncs would cost a disk flush per state change of every download.
            database = try Self.openPrivately(path, directory: directory)
            try Self.migrator.migrate(database)
        } catch {
            throw Self.storeError(error, path: (directory as NSString).appendingPathComponent(Self.fileName))
        }
    }

    /// The state directory and the database hold credentials while downloads that need them are
    /// queued: 0700 and 0600 (SQLite gives its -wal and -shm files the database's mode). Deleted
    /// rows and columns are overwritten, not left in free pages (`secure_delete`).
    private static func openPrivately(_ path: String, directory: String) throws -> DatabaseQueue {
        _ = chmod(directory, 0o700)
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if fd >= 0 {
            _ = fchmod(fd, 0o600)
            close(fd)
        }
        let database = try DatabaseQueue(path: path, synchronous: .normal)
        try database.writeWithoutTransaction { db in
            guard try db.query("PRAGMA secure_delete=ON").first?[0].int64 == 1 else {
                throw StoreError(.io, "SQLite did not accept secure_delete=ON for \(path): removed secrets would stay in its free pages")
            }
        }
        return database
    }

    /// Copies the write-ahead log into the database and truncates it to nothing: no earlier version
    /// of a row stays in either file (secure_delete overwrote what was freed). Whether it completed:
    /// another process reading or writing the store can keep it from finishing (SQLite's busy
    /// column), and then the log keeps its frames until a later try.
    func truncateWriteAheadLog() -> Bool {
        do {
            return try database.writeWithoutTransaction { db in
                try db.query("PRAGMA wal_checkpoint(TRUNCATE)").first?[0].int64 == 0
            }
        } catch {
            return false
        }
    }

    // MARK: plumbing

    func read<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws(StoreError) -> T {
        do {
            return try database.read(body)
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    /// Every change of the store passes here, one committed transaction per call; a `durable` one
    /// is on the disk when this returns (see `DatabaseQueue.write(durable:_:)`).
    func write<T: Sendable>(durable: Bool = false, _ body: (SQLiteConnection) throws -> T) throws(StoreError) -> T {
        let result: T
        do {
            result = try database.write(durable: durable, body)
        } catch {
            throw Self.storeError(error, path: path)
        }
        // Only after a commit: a transaction that threw was rolled back and left nothing to recover.
        CrashPoint.reach(.betweenQueueCommits)
        return result
    }

    static func storeError(_ error: any Error, path: String) -> StoreError {
        switch error {
        case let error as StoreError:
            return error
        case let error as SQLiteError where error.isBusy:
            return StoreError(.locked, "the queue database \(path) is locked by another process; try again")
        case let error as SQLiteError where error.isCorrupt:
            return StoreError(
                .corruptStore, "\(path) is not a usable Haul queue database (\(error.message)); it was left untouched — move it aside to start a new queue")
        case let error as SQLiteError where error.isDiskFull:
            return StoreError(.noSpace, "the disk holding \(path) is full")
        case let error as MigrationError:
            return StoreError(.corruptStore, "\(error.description)")
        default:
            return StoreError(.io, "queue database \(path): \(error)")
        }
    }

    // MARK: rows

    static func load(_ db: SQLiteConnection, id: Int64) throws -> StoredDownload? {
        try db.query("SELECT * FROM downloads WHERE id = ?", [.integer(id)]).first.map(decode)
    }

    /// A row as a `StoredDownload`; a damaged one too, with what is damaged (see `StoredDownload.init(row:)`).
    static func decode(_ row: Row) throws -> StoredDownload {
        try StoredDownload(row: row)
    }

    static func encodeHeaders(_ fields: [HTTPHeaders.Field]) -> String {
        if fields.isEmpty { return "[]" }
        return JSONValue.array(fields.map { [.string($0.name), .string($0.value)] }).text
    }
}
