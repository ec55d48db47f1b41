import Foundation

/// A failure reported by libpq or the PostgreSQL server, with the SQLSTATE when the server sent one.
struct PGError: Error, Sendable, CustomStringConvertible {
    /// The five-character SQLSTATE (`40001`, `23505`...), nil for a client-side failure.
    let sqlState: String?
    /// libpq's or the server's message, one line.
    let message: String
    /// The connection is gone (the server restarted, the network failed): reconnect and retry.
    let connectionLost: Bool

    init(sqlState: String? = nil, message: String, connectionLost: Bool = false) {
        self.sqlState = sqlState
        self.message = message.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "\n", with: " ")
        self.connectionLost = connectionLost
    }

    /// A serialization failure, a deadlock, or a statement the server cancelled at its
    /// `statement_timeout` (a table locked by another session): the transaction is safe to run
    /// again as a whole.
    var isRetryable: Bool {
        sqlState == "40001" || sqlState == "40P01" || sqlState == "57014"
    }

    /// A unique constraint was violated (another worker inserted the same key first).
    var isUniqueViolation: Bool { sqlState == "23505" }

    /// The server is shutting down or refuses connections for now (class 57P, 08): try again later.
    var isServerUnavailable: Bool {
        connectionLost || (sqlState.map { $0.hasPrefix("57P") || $0.hasPrefix("08") } ?? false)
    }

    var description: String {
        sqlState.map { "\(message) (SQLSTATE \($0))" } ?? message
    }
}
