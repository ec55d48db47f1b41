import Foundation
import HaulCore

/// The one serial owner of an ``SQLiteConnection``: every use of the connection goes through it,
/// one closure at a time.
///
/// The calls are synchronous and block the calling thread while waiting for the lock and for SQLite
/// (including the busy timeout). They are not reentrant: calling `read` or `write` from inside
/// another `read` or `write` on the same queue deadlocks; use the connection you were given instead.
///
/// `@unchecked Sendable` because the compiler cannot see the lock discipline: the connection (not
/// `Sendable`, opened with `SQLITE_OPEN_NOMUTEX`) is only touched while `lock` is held, so two threads
/// never use it at once. The closures get it for their duration only: results must be `Sendable`,
/// which keeps ``Statement``s and the connection itself from leaving them. (A `Mutex` holding the
/// connection would let the compiler check this, but its `inout sending` value cannot be handed to
/// an ordinary non-`Sendable` closure.)
package final class DatabaseQueue: @unchecked Sendable {
    /// The path of the database file.
    package let path: String
    /// A plain mutex rather than `Mutex`, whose Linux implementation is a priority-inheriting futex:
    /// with eight workers committing in turn, `haul -i LIST -j 8` of 1,000 small files ran ~5% faster.
    private let lock = NSLock()
    private let connection: SQLiteConnection
    /// How its commits reach the disk, unless one asks to be durable.
    private let synchronous: SQLiteConnection.Synchronous

    /// Opens (creating if missing) the database at `path`; see ``SQLiteConnection/init(path:busyTimeoutMilliseconds:)``.
    package init(
        path: String,
        busyTimeoutMilliseconds: Int = SQLiteConnection.defaultBusyTimeoutMilliseconds,
        synchronous: SQLiteConnection.Synchronous = .full
    ) throws {
        self.path = path
        self.synchronous = synchronous
        connection = try SQLiteConnection(path: path, busyTimeoutMilliseconds: busyTimeoutMilliseconds, synchronous: synchronous)
    }

    /// Runs `body` with exclusive use of the connection, outside any transaction.
    ///
    /// Each statement is its own transaction unless `body` opens one; with WAL, each statement reads a
    /// consistent snapshot. Use ``write(_:)`` for changes that must land together.
    package func read<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        LoopThread.mustNotBlock("a read of the SQLite store \(path)")
        return try lock.withLock {
            try body(connection)
        }
    }

    /// Runs `body` in a transaction (`BEGIN IMMEDIATE`): committed if it returns, rolled back if it throws.
    /// `durable`: the commit syncs the write-ahead log (and with it every commit before it) before
    /// it returns, whatever the connection's `synchronous` setting: for a write a later step on
    /// another file depends on (a finished mark before the file's rename), so that a power cut
    /// never keeps the later step and loses the write.
    package func write<T: Sendable>(durable: Bool = false, _ body: (SQLiteConnection) throws -> T) throws -> T {
        LoopThread.mustNotBlock("a write to the SQLite store \(path)")
        return try lock.withLock {
            guard durable, synchronous != .full else {
                return try connection.transaction { try body(connection) }
            }
            try connection.execute("PRAGMA synchronous=FULL")
            defer { try? connection.execute("PRAGMA synchronous=\(synchronous.pragma)") }
            return try connection.transaction { try body(connection) }
        }
    }

    /// Runs `body` with exclusive use of the connection and no transaction around it, for work that
    /// manages its own transactions (such as ``Migrator``).
    package func writeWithoutTransaction<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        LoopThread.mustNotBlock("a write to the SQLite store \(path)")
        return try lock.withLock {
            try body(connection)
        }
    }
}
