import Foundation
import HaulCore

/// The one serial owner of a ``PGConnection``, which reconnects when the server went away.
///
/// A transaction that fails because the connection broke (the server restarted, the network
/// failed), because of a serialization failure or a deadlock, runs again as a whole on a fresh
/// connection, after a backoff that doubles from 0.1 s to 2 s, until `reconnectSeconds` have
/// passed without success. A transaction whose COMMIT was sent but not acknowledged may thus run
/// twice: every write here is guarded (a settlement applies only to its own lease's row), and a
/// claim or an addition finds the rows its first run wrote by the token it left on them
/// (`claim_token`, `add_token`); an item claimed by a reply lost for good is not renewed by its worker's
/// heartbeat, and is rescued when its lease expires.
///
/// `@unchecked Sendable`: the connection (not `Sendable`) is only touched while `lock` is held.
final class PGDatabase: @unchecked Sendable {
    let conninfo: String
    let reconnectSeconds: Double
    private let lock = NSLock()
    private var connection: PGConnection?

    init(conninfo: String, reconnectSeconds: Double) throws(PGError) {
        self.conninfo = conninfo
        self.reconnectSeconds = reconnectSeconds
        connection = try PGConnection(conninfo)
    }

    /// Runs `body` in a transaction: committed if it returns, rolled back if it throws. `rerun`
    /// is true when the transaction runs again after its connection was lost, when its first run
    /// may have committed (see the type's comment).
    func transaction<T>(_ body: (PGConnection, _ rerun: Bool) throws -> T) throws -> T {
        LoopThread.mustNotBlock("a PostgreSQL transaction")
        var runs = 0
        return try withRetry { connection in
            runs += 1
            return try connection.transaction { try body(connection, runs > 1) }
        }
    }

    /// Runs `body` on the connection, reconnecting as a transaction does (schema migrations,
    /// which run transactions of their own).
    func withConnection<T>(_ body: (PGConnection) throws -> T) throws -> T {
        LoopThread.mustNotBlock("a PostgreSQL transaction")
        return try withRetry(body)
    }

    /// Runs `body` in a transaction once, only if the connection is up and free right now; nil
    /// when it is not (for writes worth nothing later, like progress: never waited for).
    func transactionIfIdle<T>(_ body: (PGConnection) throws -> T) throws -> T? {
        LoopThread.mustNotBlock("a PostgreSQL transaction")
        guard lock.try() else { return nil }
        defer { lock.unlock() }
        guard let connection, connection.isOK else { return nil }
        do {
            return try connection.transaction { try body(connection) }
        } catch {
            // A broken connection is dropped; the next call through `withRetry` makes a new one.
            if !connection.isOK { self.connection = nil }
            throw error
        }
    }

    private func withRetry<T>(_ body: (PGConnection) throws -> T) throws -> T {
        try lock.withLock {
            let deadline = Date().addingTimeInterval(reconnectSeconds)
            var delay = 0.1
            while true {
                do {
                    let connection = try connected()
                    return try body(connection)
                } catch let error as PGError where error.isRetryable || error.isServerUnavailable {
                    if error.isServerUnavailable || !(connection?.isOK ?? false) { connection = nil }
                    guard Date() < deadline else { throw error }
                    Thread.sleep(forTimeInterval: delay)
                    delay = min(delay * 2, 2)
                }
            }
        }
    }

    private func connected() throws(PGError) -> PGConnection {
        if let connection, connection.isOK { return connection }
        connection = nil
        let fresh = try PGConnection(conninfo)
        connection = fresh
        return fresh
    }
}
