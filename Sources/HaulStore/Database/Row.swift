import CSQLite

/// One result row, with its values addressable by column position or name.
package struct Row: Sendable, Hashable {
    /// The column names, in result order.
    package let columnNames: [String]
    /// The values, in the same order as `columnNames`.
    package let values: [StoreValue]

    /// Creates a row; `columnNames` and `values` must have the same count.
    package init(columnNames: [String], values: [StoreValue]) {
        precondition(columnNames.count == values.count, "a row needs one name per value")
        self.columnNames = columnNames
        self.values = values
    }

    /// The value at `index` (0-based).
    package subscript(index: Int) -> StoreValue {
        values[index]
    }

    /// The value of the first column named `name` (compared case-insensitively, as SQL does), or
    /// `nil` when the row has no such column.
    package subscript(name: String) -> StoreValue? {
        if let index = columnNames.firstIndex(of: name) { return values[index] }
        let lowered = name.lowercased()
        return columnNames.firstIndex { $0.lowercased() == lowered }.map { values[$0] }
    }

    /// The position of a column named exactly `name`, looked for from `hint` on, then before it:
    /// a reader taking columns in about their order finds each at the first look, where the
    /// subscript compares it with every column before it. Nil when no column has that exact name.
    package func index(of name: String, from hint: Int) -> Int? {
        let start = min(max(hint, 0), columnNames.count)
        if let index = columnNames[start...].firstIndex(of: name) { return index }
        return columnNames[..<start].firstIndex(of: name)
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

    private func required<T>(_ name: String, _ wanted: String, _ read: (StoreValue) -> T?) throws(SQLiteError) -> T {
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
