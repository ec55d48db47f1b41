import CPostgres
import Foundation
import HaulCore

/// One libpq connection, closed when the object goes away. Not `Sendable`: one thread at a time
/// uses it, through ``PGDatabase``. Every value goes to the server as a typed parameter (`$1`),
/// never spliced into SQL.
///
/// Nothing waits for the server without a deadline: connecting gives up after `connect_timeout`
/// (5 s unless the URI says otherwise), TCP keepalives find a peer that vanished, and each
/// statement's answer is awaited for `statementSeconds` at most (`HAUL_PG_STATEMENT_SECONDS`,
/// else 15; at least 1), after which the connection is given up as lost (its state is unknown)
/// and the caller's retry reconnects. The server's own `statement_timeout` is twice that (it frees
/// the server from a client that vanished; the client's deadline comes first), and a statement it
/// cancels is retried like a deadlock.
final class PGConnection {
    let handle: OpaquePointer
    /// The connection string without its password, for messages.
    let location: String
    /// Seconds a statement's answer is waited for.
    let statementSeconds: Double
    /// Given up after a statement's deadline passed: never used again.
    private var abandoned = false
    /// The statements prepared on this connection (parsed and planned once, by the server), by
    /// their text: the queue's are a fixed set, so this stays small; past `maxPrepared` a
    /// statement is sent unprepared.
    private var prepared: [String: String] = [:]
    static let maxPrepared = 128

    /// The deadline for each statement, from `HAUL_PG_STATEMENT_SECONDS` (else 15 s).
    static let defaultStatementSeconds: Double = {
        let text = ProcessInfo.processInfo.environment["HAUL_PG_STATEMENT_SECONDS"] ?? ""
        guard let value = Double(text), value.isFinite, value > 0 else { return 15 }
        return min(max(value, 1), 3600)
    }()

    /// Connects with a libpq connection string or URI (`postgresql://user@host:port/db`).
    init(_ conninfo: String, statementSeconds: Double = PGConnection.defaultStatementSeconds) throws(PGError) {
        self.statementSeconds = statementSeconds
        location = Redaction.withoutPassword(conninfo)
        // Defaults first: the URI's own values, expanded from `dbname`, come later and win.
        let keywords = ["connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count", "dbname"]
        let values = ["5", "1", "10", "5", "3", conninfo]
        let connected = Self.withCStrings(keywords) { keys in
            Self.withCStrings(values) { vals in PQconnectdbParams(keys, vals, 1) }
        }
        guard let handle = connected else {
            throw PGError(message: "libpq could not allocate a connection", connectionLost: true)
        }
        guard PQstatus(handle) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(handle))
            PQfinish(handle)
            throw PGError(message: "cannot connect to PostgreSQL: \(message)", connectionLost: true)
        }
        self.handle = handle
        // The server's NOTICEs (an IF NOT EXISTS that found the table) would go to stderr.
        try execute("SET client_min_messages TO warning; SET statement_timeout = \(Int(statementSeconds * 2000))")
    }

    /// A NULL-terminated array of C strings for the duration of `body`.
    private static func withCStrings<T>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> T) -> T {
        let copies: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) } + [nil]
        defer {
            for copy in copies { free(copy) }
        }
        return copies.map { $0.map { UnsafePointer($0) } }.withUnsafeBufferPointer { buffer in body(buffer.baseAddress) }
    }

    deinit {
        PQfinish(handle)
    }

    /// Whether the connection is usable: libpq considers it so, and no deadline passed on it.
    var isOK: Bool { !abandoned && PQstatus(handle) == CONNECTION_OK }

    /// Runs one statement with typed parameters (sent in PostgreSQL's text format, see
    /// `PGParameter`) and returns its rows as values.
    @discardableResult
    func query(_ sql: String, _ parameters: [StoreValue] = []) throws(PGError) -> PGResult {
        let texts = parameters.map(PGParameter.text)
        // A C string ends at a NUL: sent as is, the value would arrive cut short (another URL,
        // another path). PostgreSQL's text cannot hold one anyway.
        if texts.contains(where: { $0?.utf8.contains(0) ?? false }) {
            throw PGError(message: "a value with a NUL byte cannot be sent to PostgreSQL", connectionLost: false)
        }
        let copies: [UnsafeMutablePointer<CChar>?] = texts.map { $0.flatMap { strdup($0) } }
        defer {
            for copy in copies { free(copy) }
        }
        let name = try preparedName(sql, parameters: parameters.count)
        let sent = copies.withUnsafeBufferPointer { buffer -> Int32 in
            let values = buffer.map { UnsafePointer($0) }
            return values.withUnsafeBufferPointer { pointers in
                if let name { return PQsendQueryPrepared(handle, name, Int32(parameters.count), pointers.baseAddress, nil, nil, 0) }
                return PQsendQueryParams(handle, sql, Int32(parameters.count), nil, pointers.baseAddress, nil, nil, 0)
            }
        }
        guard sent == 1 else {
            throw PGError(message: String(cString: PQerrorMessage(handle)), connectionLost: true)
        }
        return PGResult(try checked(awaitResult()))
    }

    /// The name `sql` is prepared under on this connection, preparing it first if it is not yet;
    /// nil once `maxPrepared` statements are (it is then sent with its parameters, unprepared).
    private func preparedName(_ sql: String, parameters: Int) throws(PGError) -> String? {
        if let name = prepared[sql] { return name }
        guard prepared.count < Self.maxPrepared else { return nil }
        let name = "haul_\(prepared.count)"
        guard PQsendPrepare(handle, name, sql, Int32(parameters), nil) == 1 else {
            throw PGError(message: String(cString: PQerrorMessage(handle)), connectionLost: true)
        }
        PQclear(try checked(awaitResult()))
        prepared[sql] = name
        return name
    }

    /// `result` if it succeeded; else its error, cleared. A prepared statement whose table
    /// changed shape under it (another process migrated the schema: SQLSTATE 0A000, "cached plan
    /// must not change result type") gives its connection up: the caller's retry reconnects and
    /// prepares anew.
    private func checked(_ result: OpaquePointer) throws(PGError) -> OpaquePointer {
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let state = PQresultErrorField(result, haul_pg_diag_sqlstate()).map { String(cString: $0) }
            let message = String(cString: PQresultErrorMessage(result))
            PQclear(result)
            if state == "0A000" && !prepared.isEmpty { abandoned = true }
            throw PGError(sqlState: state, message: message, connectionLost: !isOK || status == PGRES_FATAL_ERROR && state == nil)
        }
        return result
    }

    /// Runs several statements without parameters (schema migrations).
    func execute(_ sql: String) throws(PGError) {
        guard PQsendQuery(handle, sql) == 1 else {
            throw PGError(message: String(cString: PQerrorMessage(handle)), connectionLost: true)
        }
        PQclear(try checked(awaitResult()))
    }

    /// The answer to the statement(s) just sent, within `statementSeconds`: the first failed
    /// result if any, else the last one. Past the deadline the connection is abandoned.
    private func awaitResult() throws(PGError) -> OpaquePointer {
        let deadline = ContinuousClock.now + .milliseconds(Int64(statementSeconds * 1000))
        var kept: OpaquePointer?
        while true {
            while PQisBusy(handle) == 1 {
                let left = (deadline - .now) / .milliseconds(1)
                guard left > 0 else {
                    if let kept { PQclear(kept) }
                    abandoned = true
                    throw PGError(
                        message: "PostgreSQL did not answer within \(Self.seconds(statementSeconds)) s; the connection is given up", connectionLost: true)
                }
                var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
                let ready = poll(&descriptor, 1, Int32(min(left.rounded(.up), 1000)))
                if ready < 0 && errno != EINTR {
                    abandoned = true
                    throw PGError(message: "poll on the PostgreSQL connection failed", connectionLost: true)
                }
                if ready > 0 && PQconsumeInput(handle) == 0 {
                    if let kept { PQclear(kept) }
                    throw PGError(message: String(cString: PQerrorMessage(handle)), connectionLost: true)
                }
            }
            guard let next = PQgetResult(handle) else { break }
            if let earlier = kept, !Self.succeeded(earlier) {
                // The first failure is the answer.
                PQclear(next)
            } else {
                if let earlier = kept { PQclear(earlier) }
                kept = next
            }
        }
        guard let kept else {
            throw PGError(message: String(cString: PQerrorMessage(handle)), connectionLost: !isOK)
        }
        return kept
    }

    private static func succeeded(_ result: OpaquePointer) -> Bool {
        let status = PQresultStatus(result)
        return status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
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

extension PGConnection: MigrationConnection {
    /// `body` between BEGIN and COMMIT; rolled back when it throws, if the connection still works.
    package func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            if isOK { try? execute("ROLLBACK") }
            throw error
        }
    }

    package func noteMigrationCount(_ count: Int) {}

    package func hasTable(_ name: String) throws -> Bool {
        try !rows("SELECT 1 FROM information_schema.tables WHERE table_name = $1 AND table_schema = current_schema()", [.text(name)]).isEmpty
    }

    package func rows(_ sql: String, _ parameters: [StoreValue]) throws -> [Row] {
        try query(sql, parameters).rows
    }

    @discardableResult
    package func run(_ sql: String, _ parameters: [StoreValue]) throws -> Int {
        try query(sql, parameters).affected
    }
}

/// A parameter in PostgreSQL's text format: how each `StoreValue` goes to the server, written
/// in this one place (a list as an array literal, bytes as `bytea` hex).
enum PGParameter {
    /// The text sent for `value`; nil is NULL.
    static func text(_ value: StoreValue) -> String? {
        switch value {
        case .null: return nil
        case .integer(let integer): return String(integer)
        case .real(let real): return real.isFinite ? String(real) : (real.isNaN ? "NaN" : real > 0 ? "Infinity" : "-Infinity")
        case .text(let text): return text
        case .blob(let bytes): return PGBytes.encode(bytes)
        case .integers(let integers): return "{" + integers.map(String.init).joined(separator: ",") + "}"
        case .texts(let texts): return "{" + texts.map(quoted).joined(separator: ",") + "}"
        }
    }

    /// An array element, double-quoted with `\` and `"` escaped (so NULL, commas and braces in
    /// it are text).
    private static func quoted(_ text: String) -> String {
        // By Unicode scalar, not by Character: a quote followed by a combining mark is one
        // Character, and compared as one it would go out unescaped.
        var out = String.UnicodeScalarView()
        out.append("\"")
        for scalar in text.unicodeScalars {
            if scalar == "\\" || scalar == "\"" { out.append("\\") }
            out.append(scalar)
        }
        out.append("\"")
        return String(out)
    }
}
