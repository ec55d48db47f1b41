import Foundation
import HaulCore
import Synchronization

/// The queue's SQLite database: one file in a state directory (WAL, one serial owner of the
/// connection, see `DatabaseQueue`), shared by the processes of one machine.
final class SQLiteQueueDatabase: QueueDatabase {
    /// The database file.
    let path: String
    private let database: DatabaseQueue
    /// Whether removed secrets may still have copies in the write-ahead log (see `forgetRemovedSecrets`).
    private let secretsToForget = Mutex(SecretsToForget())
    /// Ends the waits of idle workers (see `waitForWork`).
    private let workSignal = WorkSignal()

    var location: String { path }
    var isShared: Bool { false }
    var dialect: QueueDialect { .sqlite }

    /// Opens (creating if needed) the database `fileName` in `directory` and brings its schema up
    /// to date. A file that is not a Haul store is reported, never overwritten.
    init(directory: String, fileName: String) throws(StoreError) {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw StoreError(.io, "cannot create the state directory \(directory): \(error.localizedDescription)")
        }
        let path = (directory as NSString).appendingPathComponent(fileName)
        self.path = path
        do {
            // NORMAL: a power cut may roll back the latest commits, never corrupt the store. Every
            // write here only ever claims less than is durable (data is fdatasync'ed before a record
            // claims it), so a lost commit means re-fetching a little, never trusting torn bytes;
            // a commit that syncs would cost a disk flush per state change of every download.
            database = try Self.openPrivately(path, directory: directory)
            try database.writeWithoutTransaction { db in try QueueDialect.sqlite.migrator.migrate(db) }
        } catch {
            throw Self.storeError(error, path: path)
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

    func transaction<T: Sendable>(durable: Bool, _ body: (any StoreConnection, _ rerun: Bool) throws -> T) throws(StoreError) -> T {
        let result: T
        do {
            result = try database.write(durable: durable) { db in try body(db, false) }
        } catch {
            throw Self.storeError(error, path: path)
        }
        // Only after a commit: a transaction that threw was rolled back and left nothing to recover.
        CrashPoint.reach(.betweenQueueCommits)
        return result
    }

    func read<T: Sendable>(_ body: (any StoreConnection) throws -> T) throws(StoreError) -> T {
        do {
            return try database.read { db in try body(db) }
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    /// The processes of one machine take turns on the file: a write waits for its turn.
    func transactionIfIdle<T: Sendable>(_ body: (any StoreConnection) throws -> T) throws(StoreError) -> T? {
        try transaction(durable: false) { db, _ in try body(db) }
    }

    /// The owner's own name: every worker of the store is on this machine.
    func workerName(_ owner: LeaseOwner) -> String {
        "\(owner.bootID)/\(owner.pid)"
    }

    /// One machine: every item is added by a process of this machine, which wakes its own
    /// workers; a wait here is a plain timed wait that `wakeWaiters` ends.
    func waitForWork(seconds: Double) {
        workSignal.wait(seconds: seconds)
    }

    func wakeWaiters() {
        workSignal.wake()
    }

    func noteSecretsRemoved() {
        secretsToForget.withLock { $0.pending = true }
    }

    /// Truncates the write-ahead log, so no earlier copy of a removed secret stays in it: now (a
    /// command that just cancelled or removed a download, the end of a run), or `soon`: if a
    /// commit removed secrets since the last truncation, at most once every
    /// `SecretsToForget.interval` (a run settling many downloads truncates once for many; a
    /// long-running run calls this after each settlement and every few seconds, so a secret leaves
    /// the files within seconds of its download settling). Best effort: another process reading
    /// the store can keep the log from shrinking; a later try does it.
    func forgetRemovedSecrets(soon: Bool) {
        let now = ContinuousClock.now
        let pending: Bool
        if soon {
            guard secretsToForget.withLock({ $0.takeIfDue(now: now) }) else { return }
            pending = true
        } else {
            pending = secretsToForget.withLock { $0.take(now: now) }
        }
        if !truncateWriteAheadLog() {
            secretsToForget.withLock { $0.failed(pending) }
        }
    }

    /// Copies the write-ahead log into the database and truncates it to nothing: no earlier version
    /// of a row stays in either file (secure_delete overwrote what was freed). Whether it completed:
    /// another process reading or writing the store can keep it from finishing (SQLite's busy
    /// column), and then the log keeps its frames until a later try.
    private func truncateWriteAheadLog() -> Bool {
        do {
            return try database.writeWithoutTransaction { db in
                try db.query("PRAGMA wal_checkpoint(TRUNCATE)").first?[0].int64 == 0
            }
        } catch {
            return false
        }
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
}
