import CSQLite
import Foundation
import HaulJSON

/// A prepared SQL statement, finalized when the object goes away (a statement of the
/// connection's cache goes with its connection).
///
/// Belongs to the connection that prepared it and, like it, must stay on one thread at a time.
/// Parameter indexes are 1-based (as in SQL); column indexes are 0-based (as in SQLite's C API).
package final class Statement {
    /// The SQL this statement was prepared from.
    package let sql: String
    /// Kept so the connection outlives its statements: `sqlite3_close_v2` would otherwise leave a
    /// zombie. Nil for a statement of the connection's own cache, which it finalizes itself.
    private let owner: SQLiteConnection?
    /// The connection, for its error messages.
    private unowned let connection: SQLiteConnection
    private let handle: OpaquePointer
    /// Whether the latest `step()` failed, so the next `sqlite3_reset` repeats that failure.
    private var lastStepFailed = false

    init(connection: SQLiteConnection, handle: OpaquePointer, sql: String, cached: Bool = false) {
        self.owner = cached ? nil : connection
        self.connection = connection
        self.handle = handle
        self.sql = sql
    }

    deinit {
        sqlite3_finalize(handle)
    }

    private func check(_ code: Int32) throws {
        guard code == SQLITE_OK else {
            throw SQLiteError.fromHandle(connection.handle, code: code, sql: sql)
        }
    }

    // MARK: - Binding

    /// Whether the statement's parameters are written `$1`, `$2`, ... (see `bind(_:)`), asked of
    /// SQLite once: the SQL text decides it, and a statement is run again and again from the cache.
    private lazy var isNumbered: Bool = {
        guard parameterCount > 0, let name = sqlite3_bind_parameter_name(handle, 1) else { return false }
        let text = String(cString: name)
        return text.hasPrefix("$") && Int(text.dropFirst()) != nil
    }()
    /// The parameter index of `$1`, `$2`, ... (0: not in the statement), as far as asked: fixed by
    /// the SQL text, so looked up once rather than by name on every run.
    private var numberedIndexes: [Int32] = []

    /// The parameter index of `$number` (0 when the statement has no such parameter).
    private func numberedIndex(_ number: Int) -> Int32 {
        while numberedIndexes.count < number {
            numberedIndexes.append(sqlite3_bind_parameter_index(handle, "$\(numberedIndexes.count + 1)"))
        }
        return numberedIndexes[number - 1]
    }

    /// The number of parameters (`?`, `?NNN`, `:name`, `@name`, `$name`) in the statement.
    package var parameterCount: Int {
        Int(sqlite3_bind_parameter_count(handle))
    }

    /// Binds `value` to the parameter at `index` (1-based).
    package func bind(_ value: StoreValue, at index: Int) throws {
        guard let position = Int32(exactly: index) else {
            throw SQLiteError(
                extendedResultCode: SQLITE_RANGE, message: "parameter index \(index) is out of range", sql: sql)
        }
        let code: Int32
        switch value {
        case .null:
            code = sqlite3_bind_null(handle, position)
        case .integer(let integer):
            code = sqlite3_bind_int64(handle, position, integer)
        case .real(let real):
            code = sqlite3_bind_double(handle, position, real)
        case .text(let text):
            // An explicit length keeps embedded NULs; withCString never passes a NULL pointer, so ""
            // stays an empty string rather than becoming NULL.
            let length = sqlite3_uint64(text.utf8.count)
            code = text.withCString { pointer in
                sqlite3_bind_text64(handle, position, pointer, length, haul_sqlite_transient(), UInt8(SQLITE_UTF8))
            }
        case .blob(let bytes):
            if bytes.isEmpty {
                // sqlite3_bind_blob with a NULL pointer would bind NULL, not an empty blob.
                code = sqlite3_bind_zeroblob(handle, position, 0)
            } else {
                code = bytes.withUnsafeBytes { buffer in
                    sqlite3_bind_blob64(
                        handle, position, buffer.baseAddress, sqlite3_uint64(buffer.count), haul_sqlite_transient())
                }
            }
        case .integers, .texts:
            // A list goes in as a JSON array, which the statement reads with `json_each(?)`.
            try bind(.text(Self.jsonArray(value)), at: index)
            return
        }
        try check(code)
    }

    /// Binds `value` to the named parameter `name`, written as in the SQL including its prefix
    /// (`":id"`, `"@id"`, `"$id"`).
    package func bind(_ value: StoreValue, named name: String) throws {
        let index = sqlite3_bind_parameter_index(handle, name)
        guard index > 0 else {
            throw SQLiteError(
                extendedResultCode: SQLITE_RANGE, message: "the statement has no parameter named \(name)", sql: sql)
        }
        try bind(value, at: Int(index))
    }

    /// Binds `values` to parameters 1, 2, ... in order; the count must match `parameterCount`.
    /// A statement written with PostgreSQL's numbered parameters (`$1`, `$2`, in any order, each
    /// as often as needed: the queue's statements shared by both databases) takes value `i` at
    /// `$i`; such a statement need not use every value, and must not name one it is not given.
    package func bind(_ values: [StoreValue]) throws {
        if isNumbered {
            var bound = 0
            for (offset, value) in values.enumerated() {
                let index = numberedIndex(offset + 1)
                guard index > 0 else { continue }
                try bind(value, at: Int(index))
                bound += 1
            }
            guard bound == parameterCount else {
                throw SQLiteError(
                    extendedResultCode: SQLITE_RANGE, message: "the statement names a parameter beyond the \(values.count) values given", sql: sql)
            }
            return
        }
        guard values.count == parameterCount else {
            throw SQLiteError(
                extendedResultCode: SQLITE_RANGE,
                message: "the statement has \(parameterCount) parameters but \(values.count) values were given",
                sql: sql)
        }
        for (offset, value) in values.enumerated() {
            try bind(value, at: offset + 1)
        }
    }

    /// Binds `value` to the parameter at `index` (1-based).
    package func bind(_ value: Int64, at index: Int) throws { try bind(.integer(value), at: index) }
    /// Binds `value` to the parameter at `index` (1-based).
    package func bind(_ value: Int, at index: Int) throws { try bind(StoreValue(value), at: index) }
    /// Binds `value` to the parameter at `index` (1-based).
    package func bind(_ value: Double, at index: Int) throws { try bind(.real(value), at: index) }
    /// Binds `value` to the parameter at `index` (1-based).
    package func bind(_ value: String, at index: Int) throws { try bind(.text(value), at: index) }
    /// Binds `value` as a blob to the parameter at `index` (1-based).
    package func bind(_ value: [UInt8], at index: Int) throws { try bind(.blob(value), at: index) }
    /// Binds `value` as a blob to the parameter at `index` (1-based).
    package func bind(_ value: Data, at index: Int) throws { try bind(StoreValue(value), at: index) }
    /// Binds `value` as 1 or 0 to the parameter at `index` (1-based).
    package func bind(_ value: Bool, at index: Int) throws { try bind(StoreValue(value), at: index) }
    /// Binds NULL to the parameter at `index` (1-based).
    package func bindNull(at index: Int) throws { try bind(.null, at: index) }

    // MARK: - Running

    /// Runs the statement to its next row: `true` when a row is available through the column getters,
    /// `false` when the statement has finished.
    @discardableResult
    package func step() throws -> Bool {
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            lastStepFailed = true
            throw SQLiteError.fromHandle(connection.handle, code: code, sql: sql)
        }
    }

    /// Rewinds the statement so it can run again; bindings are kept.
    ///
    /// Does not report the error of a failed earlier `step()` again: that one was already thrown.
    package func reset() throws {
        let code = sqlite3_reset(handle)
        let repeatsStepFailure = lastStepFailed
        lastStepFailed = false
        // After a failed step, sqlite3_reset returns that step's error once more; it was already thrown.
        guard code == SQLITE_OK || repeatsStepFailure else {
            throw SQLiteError.fromHandle(connection.handle, code: code, sql: sql)
        }
    }

    /// Runs the statement until it finishes, discarding any rows.
    package func run() throws {
        while try step() {}
    }

    /// Runs the statement from the start and collects every row.
    ///
    /// The column names are read after the first step: a statement SQLite prepares again then
    /// (the schema changed since it was compiled, another process migrated the store) may have
    /// other columns than it had before, and the names read before the step were the old ones.
    package func rows() throws -> [Row] {
        try reset()
        guard try step() else { return [] }
        let names = resultColumnNames()
        var result = [Row(columnNames: names, values: (0..<names.count).map(value))]
        while try step() {
            result.append(Row(columnNames: names, values: (0..<names.count).map(value)))
        }
        return result
    }

    /// The names of the result columns, as of the last run (see `resultColumnNames()`).
    private var lastColumnNames: [String] = []

    /// The names of the result columns: those of the last run while SQLite still gives the same
    /// (compared as C strings, which costs a fraction of making Strings of them again), else read
    /// afresh (a statement prepared again after a schema change may name other columns).
    private func resultColumnNames() -> [String] {
        let count = columnCount
        let same =
            lastColumnNames.count == count
            && lastColumnNames.indices.allSatisfy { index in
                guard let name = sqlite3_column_name(handle, Int32(index)) else { return lastColumnNames[index].isEmpty }
                return lastColumnNames[index].withCString { strcmp($0, name) == 0 }
            }
        if !same { lastColumnNames = (0..<count).map(columnName) }
        return lastColumnNames
    }

    // MARK: - Columns

    /// The number of columns in a result row.
    package var columnCount: Int {
        Int(sqlite3_column_count(handle))
    }

    /// The name of the column at `index` (0-based), as given by `AS` or derived by SQLite.
    package func columnName(_ index: Int) -> String {
        sqlite3_column_name(handle, Int32(index)).map { String(cString: $0) } ?? ""
    }

    /// Whether the column at `index` (0-based) of the current row is NULL.
    package func isNull(_ index: Int) -> Bool {
        sqlite3_column_type(handle, Int32(index)) == SQLITE_NULL
    }

    /// The column at `index` (0-based) as an integer, converted as SQLite does (NULL is 0).
    package func int64(_ index: Int) -> Int64 {
        sqlite3_column_int64(handle, Int32(index))
    }

    /// The column at `index` (0-based) as an `Int`, converted as SQLite does (NULL is 0).
    package func int(_ index: Int) -> Int {
        Int(int64(index))
    }

    /// The column at `index` (0-based) as a double, converted as SQLite does (NULL is 0.0).
    package func double(_ index: Int) -> Double {
        sqlite3_column_double(handle, Int32(index))
    }

    /// The column at `index` (0-based) as a boolean (non-zero is `true`, NULL is `false`).
    package func bool(_ index: Int) -> Bool {
        int64(index) != 0
    }

    /// The column at `index` (0-based) as text, or `nil` when it is NULL.
    package func string(_ index: Int) -> String? {
        let column = Int32(index)
        guard sqlite3_column_type(handle, column) != SQLITE_NULL else { return nil }
        // Text first, then its length: the order SQLite documents as free of conversions.
        // A NULL pointer for a non-NULL value only happens when SQLite is out of memory.
        guard let text = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    /// The column at `index` (0-based) as bytes, or `nil` when it is NULL; a zero-length blob is `[]`.
    package func blob(_ index: Int) -> [UInt8]? {
        let column = Int32(index)
        guard sqlite3_column_type(handle, column) != SQLITE_NULL else { return nil }
        guard let bytes = sqlite3_column_blob(handle, column) else { return [] }
        let count = Int(sqlite3_column_bytes(handle, column))
        return [UInt8](UnsafeRawBufferPointer(start: bytes, count: count))
    }

    /// The column at `index` (0-based) in its own storage class.
    package func value(_ index: Int) -> StoreValue {
        switch sqlite3_column_type(handle, Int32(index)) {
        case SQLITE_INTEGER: return .integer(int64(index))
        case SQLITE_FLOAT: return .real(double(index))
        case SQLITE_TEXT: return string(index).map(StoreValue.text) ?? .null
        case SQLITE_BLOB: return blob(index).map(StoreValue.blob) ?? .null
        default: return .null
        }
    }

    /// A list parameter as the JSON array `json_each` reads.
    private static func jsonArray(_ value: StoreValue) -> String {
        switch value {
        case .integers(let integers): return JSONValue.array(integers.map(JSONValue.int)).text
        case .texts(let texts): return JSONValue.array(texts.map(JSONValue.string)).text
        default: return "[]"
        }
    }
}

@available(*, unavailable, message: "a Statement belongs to its connection's owner; see DatabaseQueue")
extension Statement: Sendable {}
