import CSQLite
import Foundation

/// A value SQLite can store: one of its five storage classes.
///
/// Literals work where a value is expected: `[42, 1.5, "text", nil, true]`.
package enum SQLiteValue: Sendable, Hashable {
    /// SQL NULL.
    case null
    /// A 64-bit signed integer.
    case integer(Int64)
    /// An IEEE 754 double.
    case real(Double)
    /// UTF-8 text.
    case text(String)
    /// Raw bytes; an empty array is a zero-length blob, not NULL.
    case blob([UInt8])

    /// An integer value.
    package init(_ value: Int) { self = .integer(Int64(value)) }
    /// An integer value.
    package init(_ value: Int64) { self = .integer(value) }
    /// A real value.
    package init(_ value: Double) { self = .real(value) }
    /// A text value.
    package init(_ value: String) { self = .text(value) }
    /// A blob value.
    package init(_ value: [UInt8]) { self = .blob(value) }
    /// A blob value.
    package init(_ value: Data) { self = .blob([UInt8](value)) }
    /// A boolean stored as the integer 1 or 0, as SQLite itself does.
    package init(_ value: Bool) { self = .integer(value ? 1 : 0) }

    /// Whether this is SQL NULL.
    package var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The integer, or `nil` when the value is not an integer.
    package var int64: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    /// The integer as `Int`, or `nil` when the value is not an integer.
    package var int: Int? {
        int64.map { Int($0) }
    }

    /// The number as a `Double` (integers convert), or `nil` for other storage classes.
    package var double: Double? {
        switch self {
        case .real(let value): return value
        case .integer(let value): return Double(value)
        default: return nil
        }
    }

    /// The text, or `nil` when the value is not text.
    package var string: String? {
        if case .text(let value) = self { return value }
        return nil
    }

    /// The bytes, or `nil` when the value is not a blob.
    package var blob: [UInt8]? {
        if case .blob(let value) = self { return value }
        return nil
    }

    /// The integer read as a boolean (non-zero is `true`), or `nil` when the value is not an integer.
    package var bool: Bool? {
        int64.map { $0 != 0 }
    }
}

extension SQLiteValue: ExpressibleByNilLiteral {
    package init(nilLiteral: ()) { self = .null }
}

extension SQLiteValue: ExpressibleByIntegerLiteral {
    package init(integerLiteral value: Int64) { self = .integer(value) }
}

extension SQLiteValue: ExpressibleByFloatLiteral {
    package init(floatLiteral value: Double) { self = .real(value) }
}

extension SQLiteValue: ExpressibleByStringLiteral {
    package init(stringLiteral value: String) { self = .text(value) }
}

extension SQLiteValue: ExpressibleByBooleanLiteral {
    package init(booleanLiteral value: Bool) { self = .integer(value ? 1 : 0) }
}

/// One result row, with its values addressable by column position or name.
package struct Row: Sendable, Hashable {
    /// The column names, in result order.
    package let columnNames: [String]
    /// The values, in the same order as `columnNames`.
    package let values: [SQLiteValue]

    /// Creates a row; `columnNames` and `values` must have the same count.
    package init(columnNames: [String], values: [SQLiteValue]) {
        precondition(columnNames.count == values.count, "a row needs one name per value")
        self.columnNames = columnNames
        self.values = values
    }

    /// The value at `index` (0-based).
    package subscript(index: Int) -> SQLiteValue {
        values[index]
    }

    /// The value of the first column named `name` (compared case-insensitively, as SQL does), or
    /// `nil` when the row has no such column.
    package subscript(name: String) -> SQLiteValue? {
        if let index = columnNames.firstIndex(of: name) { return values[index] }
        let lowered = name.lowercased()
        return columnNames.firstIndex { $0.lowercased() == lowered }.map { values[$0] }
    }

    /// The integer in column `name`, or `nil` when it is missing, NULL or not an integer.
    package func int64(_ name: String) -> Int64? { self[name]?.int64 }
    /// The integer in column `name` as `Int`, or `nil` when it is missing, NULL or not an integer.
    package func int(_ name: String) -> Int? { self[name]?.int }
    /// The number in column `name`, or `nil` when it is missing, NULL or not a number.
    package func double(_ name: String) -> Double? { self[name]?.double }
    /// The text in column `name`, or `nil` when it is missing, NULL or not text.
    package func string(_ name: String) -> String? { self[name]?.string }
    /// The bytes in column `name`, or `nil` when it is missing, NULL or not a blob.
    package func blob(_ name: String) -> [UInt8]? { self[name]?.blob }
    /// The boolean in column `name`, or `nil` when it is missing, NULL or not an integer.
    package func bool(_ name: String) -> Bool? { self[name]?.bool }
    /// Whether column `name` is NULL (`false` when there is no such column).
    package func isNull(_ name: String) -> Bool { self[name]?.isNull ?? false }

    // Required columns: for values that must be there. A NOT NULL column that reads back NULL or as
    // another storage class is a damaged row, and a made-up 0 or "" in its place would be taken for
    // real data; these throw instead.

    /// The integer in column `name`; throws when the column is missing, NULL or not an integer.
    package func requiredInt64(_ name: String) throws(SQLiteError) -> Int64 {
        try required(name, "an integer") { $0.int64 }
    }

    /// The integer in column `name` as `Int`; throws when the column is missing, NULL or not an integer.
    package func requiredInt(_ name: String) throws(SQLiteError) -> Int {
        try required(name, "an integer") { $0.int }
    }

    /// The number in column `name`; throws when the column is missing, NULL or not a number.
    package func requiredDouble(_ name: String) throws(SQLiteError) -> Double {
        try required(name, "a number") { $0.double }
    }

    /// The text in column `name`; throws when the column is missing, NULL or not text.
    package func requiredString(_ name: String) throws(SQLiteError) -> String {
        try required(name, "text") { $0.string }
    }

    /// The bytes in column `name`; throws when the column is missing, NULL or not a blob.
    package func requiredBlob(_ name: String) throws(SQLiteError) -> [UInt8] {
        try required(name, "a blob") { $0.blob }
    }

    /// The boolean in column `name`; throws when the column is missing, NULL or not an integer.
    package func requiredBool(_ name: String) throws(SQLiteError) -> Bool {
        try required(name, "an integer (boolean)") { $0.bool }
    }

    private func required<T>(_ name: String, _ wanted: String, _ read: (SQLiteValue) -> T?) throws(SQLiteError) -> T {
        guard let value = self[name] else {
            // A query that does not select the column: a mistake in the SQL, not in the data.
            throw SQLiteError(
                extendedResultCode: SQLITE_RANGE,
                message: "the row has no column \(name) (it has \(columnNames.joined(separator: ", ")))")
        }
        guard let result = read(value) else {
            throw SQLiteError(
                extendedResultCode: SQLITE_MISMATCH,
                message: "column \(name) holds \(value.storageClass) where \(wanted) is required: the row is damaged")
        }
        return result
    }
}

extension SQLiteValue {
    /// The storage class, as SQLite's `typeof()` names it.
    var storageClass: String {
        switch self {
        case .null: return "null"
        case .integer: return "integer"
        case .real: return "real"
        case .text: return "text"
        case .blob: return "blob"
        }
    }
}
