import CPostgres
import Foundation

/// One libpq connection, closed when the object goes away. Not `Sendable`: one thread at a time
/// uses it, through ``PGDatabase``. Every value goes to the server as a text parameter (`$1`),
/// never spliced into SQL.
final class PGConnection {
    let handle: OpaquePointer

    /// Connects with a libpq connection string or URI (`postgresql://user@host:port/db`).
    init(_ conninfo: String) throws(PGError) {
        guard let handle = PQconnectdb(conninfo) else {
            throw PGError(message: "libpq could not allocate a connection", connectionLost: true)
        }
        guard PQstatus(handle) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(handle))
            PQfinish(handle)
            throw PGError(message: "cannot connect to PostgreSQL: \(message)", connectionLost: true)
        }
        self.handle = handle
        // The server's NOTICEs (an IF NOT EXISTS that found the table) would go to stderr.
        try execute("SET client_min_messages TO warning")
    }

    deinit {
        PQfinish(handle)
    }

    /// Whether libpq still considers the connection usable.
    var isOK: Bool { PQstatus(handle) == CONNECTION_OK }

    /// Runs one statement with text parameters (nil is NULL) and returns its rows as text.
    @discardableResult
    func query(_ sql: String, _ parameters: [String?] = []) throws(PGError) -> PGResult {
        let copies: [UnsafeMutablePointer<CChar>?] = parameters.map { $0.flatMap { strdup($0) } }
        defer {
            for copy in copies { free(copy) }
        }
        let result = copies.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            let values = buffer.map { UnsafePointer($0) }
            return values.withUnsafeBufferPointer { pointers in
                PQexecParams(handle, sql, Int32(parameters.count), nil, pointers.baseAddress, nil, nil, 0)
            }
        }
        guard let result else {
            throw PGError(message: String(cString: PQerrorMessage(handle)), connectionLost: !isOK)
        }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let state = PQresultErrorField(result, haul_pg_diag_sqlstate()).map { String(cString: $0) }
            let message = String(cString: PQresultErrorMessage(result))
            PQclear(result)
            throw PGError(sqlState: state, message: message, connectionLost: !isOK || status == PGRES_FATAL_ERROR && state == nil)
        }
        return PGResult(result)
    }

    /// Runs several statements without parameters (schema migrations).
    func execute(_ sql: String) throws(PGError) {
        guard let result = PQexec(handle, sql) else {
            throw PGError(message: String(cString: PQerrorMessage(handle)), connectionLost: !isOK)
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let state = PQresultErrorField(result, haul_pg_diag_sqlstate()).map { String(cString: $0) }
            throw PGError(sqlState: state, message: String(cString: PQresultErrorMessage(result)), connectionLost: !isOK)
        }
    }

    /// The socket to wait on for notifications (`LISTEN`).
    var socket: Int32 { PQsocket(handle) }

    /// Reads what arrived on the socket and returns the channels notified since the last call.
    func notifications() throws(PGError) -> [String] {
        guard PQconsumeInput(handle) == 1 else {
            throw PGError(message: String(cString: PQerrorMessage(handle)), connectionLost: true)
        }
        var channels: [String] = []
        while let notify = PQnotifies(handle) {
            channels.append(String(cString: notify.pointee.relname))
            PQfreemem(notify)
        }
        return channels
    }
}

@available(*, unavailable)
extension PGConnection: Sendable {}
