import CSQLite
import Foundation

/// One open SQLite database file, closed when the object goes away.
///
/// Opened with `SQLITE_OPEN_NOMUTEX`: SQLite does no locking of its own for this handle, so the
/// connection must be used by one thread at a time. It is deliberately not `Sendable`; share a
/// database across threads or tasks through ``DatabaseQueue``, its one serial owner.
///
/// Every connection is configured for a durable store:
/// - `journal_mode=WAL`, checked: opening fails if SQLite keeps another mode (e.g. on a file
///   system without the shared memory WAL needs).
/// - `synchronous=FULL` by default: in WAL mode this syncs the WAL on every commit, so a committed
///   transaction survives a power cut, not only a crash of the process. A store whose every write
///   only ever claims less than is durable may choose `NORMAL` (see ``Synchronous``).
/// - `foreign_keys=ON`, and a busy timeout so a writer waits for another connection's transaction.
package final class SQLiteConnection {
    /// How hard a commit works to survive a power cut.
    package enum Synchronous: Int64, Sendable {
        /// WAL commits are not synced; a power cut may roll back the latest transactions (never
        /// corrupt the database). Safe when losing a recent write only makes the store claim less.
        case normal = 1
        /// Every commit syncs the WAL.
        case full = 2

        var pragma: String { self == .full ? "FULL" : "NORMAL" }
    }

    /// The default time a statement waits for another connection's lock before failing with `SQLITE_BUSY`.
    package static let defaultBusyTimeoutMilliseconds = 5000

    /// The path the connection was opened with.
    package let path: String
    let handle: OpaquePointer
    /// Distinguishes the savepoints of nested ``transaction(_:)`` calls.
    private var savepointDepth = 0
    /// The statements compiled once and run again (`StatementCache`).
    let statementCache = StatementCache()

    /// Opens the database at `path`, creating an empty one if the file does not exist.
    ///
    /// The file's header is read before anything is written, so a file that is not an SQLite
    /// database fails with an error whose `isCorrupt` is `true` and is left untouched.
    /// - Parameter busyTimeoutMilliseconds: how long to wait for another connection's lock.
    package init(
        path: String,
        busyTimeoutMilliseconds: Int = SQLiteConnection.defaultBusyTimeoutMilliseconds,
        synchronous: Synchronous = .full
    ) throws {
        var opened: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let code = sqlite3_open_v2(path, &opened, flags, nil)
        guard code == SQLITE_OK, let opened else {
            let error = SQLiteError.fromHandle(opened, code: code, sql: nil)
            // A handle is usually returned even on failure and must still be closed.
            sqlite3_close_v2(opened)
            throw SQLiteError(
                extendedResultCode: error.extendedResultCode, message: "cannot open \(path): \(error.message)")
        }
        self.path = path
        self.handle = opened
        // From here on deinit closes the handle if configuration fails.
        try configure(busyTimeoutMilliseconds: busyTimeoutMilliseconds, synchronous: synchronous)
    }

    deinit {
        // Other statements hold a reference to their connection, so only the cache's are left.
        statementCache.removeAll()
        sqlite3_close_v2(handle)
    }

    private func configure(busyTimeoutMilliseconds: Int, synchronous: Synchronous) throws {
        let timeout = Int32(clamping: max(0, busyTimeoutMilliseconds))
        let code = sqlite3_busy_timeout(handle, timeout)
        guard code == SQLITE_OK else {
            throw SQLiteError.fromHandle(handle, code: code, sql: nil)
        }
        // Read the header before any pragma that could write: a foreign file fails here with
        // SQLITE_NOTADB and is never modified.
        do {
            _ = try scalar("SELECT count(*) FROM sqlite_master")
        } catch let error as SQLiteError where error.isCorrupt {
            throw SQLiteError(
                extendedResultCode: error.extendedResultCode,
                message: "\(path) is not an SQLite database or is damaged (\(error.message)); it was left unchanged",
                sql: error.sql)
        }

        let journalMode = try switchToWAL(busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        guard journalMode == "wal" else {
            throw SQLiteError(
                extendedResultCode: SQLITE_ERROR,
                message: "\(path) cannot use write-ahead logging (SQLite kept journal mode "
                    + "'\(journalMode ?? "unknown")'); the file system may not support the shared memory "
                    + "WAL needs — put the database on a local disk",
                sql: "PRAGMA journal_mode=WAL")
        }
        try execute("PRAGMA synchronous=\(synchronous.pragma)")
        try execute("PRAGMA foreign_keys=ON")
        // Both pragmas are silently ignored in some situations; confirm they took effect.
        guard try scalar("PRAGMA synchronous").int64 == synchronous.rawValue, try scalar("PRAGMA foreign_keys").int64 == 1 else {
            throw SQLiteError(
                extendedResultCode: SQLITE_ERROR,
                message: "\(path): SQLite did not accept synchronous=\(synchronous.pragma) and foreign_keys=ON",
                sql: "PRAGMA synchronous; PRAGMA foreign_keys")
        }
    }

    /// `PRAGMA journal_mode=WAL`; the mode SQLite reports afterwards. Switching a new database
    /// takes an exclusive lock without calling the busy handler, so when several processes open a
    /// new store at once all but one fail with `SQLITE_BUSY` at once: tried again here, with short
    /// waits, for as long as the busy timeout would have waited (once the file is in WAL mode the
    /// pragma takes no lock at all).
    private func switchToWAL(busyTimeoutMilliseconds: Int) throws -> String? {
        var backoff = BusyBackoff(budget: busyTimeoutMilliseconds)
        while true {
            do {
                return try scalar("PRAGMA journal_mode=WAL").string?.lowercased()
            } catch let error as SQLiteError where error.isBusy {
                guard let delay = backoff.nextDelay() else { throw error }
                usleep(useconds_t(delay) * 1000)
            }
        }
    }

    /// The first column of the first row of `sql`, or `.null` when there is no row.
    private func scalar(_ sql: String) throws -> StoreValue {
        let statement = try prepare(sql)
        return try statement.step() ? statement.value(0) : .null
    }

    // MARK: - Running SQL

    /// Runs one or more `;`-separated statements that take no parameters, discarding any rows.
    ///
    /// Statements before a failing one stay applied unless the call is inside ``transaction(_:)``;
    /// the error carries the text of the statement that failed.
    package func execute(_ sql: String) throws {
        try sql.withCString { start in
            var cursor = start
            while cursor.pointee != 0 {
                var prepared: OpaquePointer?
                var tail: UnsafePointer<CChar>?
                let code = sqlite3_prepare_v2(handle, cursor, -1, &prepared, &tail)
                guard code == SQLITE_OK else {
                    // The failing statement's end is unknown, so the error carries the rest of the text.
                    let rest = String(cString: cursor).trimmingCharacters(in: .whitespacesAndNewlines)
                    throw SQLiteError.fromHandle(handle, code: code, sql: rest)
                }
                guard let next = tail else { break }
                defer { cursor = next }
                // Whitespace or a comment compiles to no statement.
                guard let prepared else { continue }
                let length = next - cursor
                let text = cursor.withMemoryRebound(to: UInt8.self, capacity: length) {
                    String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
                }
                let statement = Statement(
                    connection: self, handle: prepared, sql: text.trimmingCharacters(in: .whitespacesAndNewlines))
                try statement.run()
            }
        }
    }

    /// Runs one statement with positional parameters, discarding any rows.
    package func execute(_ sql: String, _ parameters: [StoreValue]) throws {
        _ = try runReusable(sql, parameters, collecting: false)
    }

    /// Compiles one statement. Text after the first statement is an error, so nothing is silently skipped.
    package func prepare(_ sql: String) throws -> Statement {
        try prepare(sql, cached: false)
    }

    /// Compiles one statement; a `cached` one is finalized by the connection's cache, not by itself.
    func prepare(_ sql: String, cached: Bool) throws -> Statement {
        var prepared: OpaquePointer?
        var trailing = false
        let code = sql.withCString { start -> Int32 in
            var tail: UnsafePointer<CChar>?
            let code = sqlite3_prepare_v2(handle, start, -1, &prepared, &tail)
            if let tail {
                trailing = String(cString: tail).contains { !$0.isWhitespace && $0 != ";" }
            }
            return code
        }
        guard code == SQLITE_OK else {
            sqlite3_finalize(prepared)
            throw SQLiteError.fromHandle(handle, code: code, sql: sql)
        }
        guard let prepared else {
            throw SQLiteError(extendedResultCode: SQLITE_MISUSE, message: "no SQL statement to prepare", sql: sql)
        }
        let statement = Statement(connection: self, handle: prepared, sql: sql, cached: cached)
        guard !trailing else {
            throw SQLiteError(
                extendedResultCode: SQLITE_MISUSE,
                message: "prepare() takes a single statement; use execute(_:) for several", sql: sql)
        }
        return statement
    }

    /// Runs one statement with positional parameters and returns every row.
    package func query(_ sql: String, _ parameters: [StoreValue] = []) throws -> [Row] {
        try runReusable(sql, parameters, collecting: true)
    }

    /// The rowid of the most recent successful `INSERT` on this connection.
    package var lastInsertRowID: Int64 {
        sqlite3_last_insert_rowid(handle)
    }

    /// The number of rows changed by the most recent `INSERT`, `UPDATE` or `DELETE` on this connection.
    package var changes: Int {
        Int(sqlite3_changes64(handle))
    }

    /// Whether a transaction is open on this connection.
    package var isInTransaction: Bool {
        sqlite3_get_autocommit(handle) == 0
    }

    // MARK: - Transactions

    /// Runs `body` in a transaction: committed if it returns, rolled back if it throws.
    ///
    /// The outermost call uses `BEGIN IMMEDIATE`, taking the write lock up front so the busy timeout
    /// applies (a deferred transaction that upgrades from read to write can fail with `SQLITE_BUSY`
    /// at once). A call inside another transaction becomes a savepoint, so only its own changes are
    /// undone when it throws.
    package func transaction<T>(_ body: () throws -> T) throws -> T {
        if isInTransaction {
            return try savepoint(body)
        }
        try execute("BEGIN IMMEDIATE", [])
        let result: T
        do {
            result = try body()
            try execute("COMMIT", [])
        } catch {
            // SQLite rolls back by itself after some errors (e.g. SQLITE_FULL); a second ROLLBACK would fail.
            if isInTransaction {
                try? execute("ROLLBACK")
            }
            throw error
        }
        return result
    }

    private func savepoint<T>(_ body: () throws -> T) throws -> T {
        savepointDepth += 1
        defer { savepointDepth -= 1 }
        let name = "haul_savepoint_\(savepointDepth)"
        try execute("SAVEPOINT \(name)", [])
        let result: T
        do {
            result = try body()
            try execute("RELEASE \(name)", [])
        } catch {
            if isInTransaction {
                try? execute("ROLLBACK TO \(name); RELEASE \(name)")
            }
            throw error
        }
        return result
    }

    // MARK: - Integrity

    /// Runs `PRAGMA quick_check` and throws an error whose `isCorrupt` is `true` if it finds problems.
    ///
    /// Reads the whole database, so it is only run when asked (e.g. after an unclean shutdown).
    package func checkIntegrity() throws {
        let sql = "PRAGMA quick_check"
        let problems = try query(sql).compactMap { $0[0].string }.filter { $0 != "ok" }
        guard problems.isEmpty else {
            throw SQLiteError(
                extendedResultCode: SQLITE_CORRUPT,
                message: "\(path) failed its integrity check: " + problems.prefix(10).joined(separator: "; "),
                sql: sql)
        }
    }
}

@available(*, unavailable, message: "a connection has one owner at a time; share it through DatabaseQueue")
extension SQLiteConnection: Sendable {}

extension SQLiteConnection: StoreConnection {
    package func rows(_ sql: String, _ parameters: [StoreValue]) throws -> [Row] {
        try query(sql, parameters)
    }

    @discardableResult
    package func run(_ sql: String, _ parameters: [StoreValue]) throws -> Int {
        try execute(sql, parameters)
        return changes
    }
}

extension SQLiteConnection: MigrationConnection {
    package var location: String { path }

    /// PRAGMA takes no parameters; the count is an integer the migrator computed.
    package func noteMigrationCount(_ count: Int) throws {
        try execute("PRAGMA user_version = \(count)")
    }

    package func hasTable(_ name: String) throws -> Bool {
        try !query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [.text(name)]).isEmpty
    }
}
