import CSQLite
import Foundation

/// A value of a queue database, as a parameter and in a result row: SQLite's five storage
/// classes, and lists of integers or texts, which each database binds its own way (SQLite as a
/// JSON array for `json_each`, PostgreSQL as an array literal for `= ANY`). PostgreSQL's results
/// come back as these too (see `PGResult`), so one decoder reads the rows of both databases.
///
/// Literals work where a value is expected: `[42, 1.5, "text", nil, true]`.
package enum StoreValue: Sendable, Hashable {
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
    /// A list of integers (a parameter only).
    case integers([Int64])
    /// A list of texts (a parameter only).
    case texts([String])

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

extension StoreValue: ExpressibleByNilLiteral {
    package init(nilLiteral: ()) { self = .null }
}

extension StoreValue: ExpressibleByIntegerLiteral {
    package init(integerLiteral value: Int64) { self = .integer(value) }
}

extension StoreValue: ExpressibleByFloatLiteral {
    package init(floatLiteral value: Double) { self = .real(value) }
}

extension StoreValue: ExpressibleByStringLiteral {
    package init(stringLiteral value: String) { self = .text(value) }
}

extension StoreValue: ExpressibleByBooleanLiteral {
    package init(booleanLiteral value: Bool) { self = .integer(value ? 1 : 0) }
}

extension StoreValue {
    /// The storage class, as SQLite's `typeof()` names it.
    var storageClass: String {
        switch self {
        case .null: return "null"
        case .integer: return "integer"
        case .real: return "real"
        case .text: return "text"
        case .blob: return "blob"
        case .integers, .texts: return "list"
        }
    }
}
