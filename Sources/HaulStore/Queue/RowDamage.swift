/// What of a stored download could not be read back: a value changed behind Haul's back (by
/// sqlite3, a failing disk) that is of the wrong type or not what Haul writes there.
///
/// A damaged item is still listed and can be removed or cancelled, but never runs: a run fails it
/// with `reason`, and the rest of the queue goes on.
public struct RowDamage: Sendable, Equatable {
    /// One column that could not be read.
    public struct Column: Sendable, Equatable {
        /// The column's name in the `downloads` table.
        public let name: String
        /// What is wrong with it, for a person: "its stored options are damaged: …".
        public let account: String
    }

    /// The columns that could not be read, in the order they were read.
    public let columns: [Column]

    /// What is wrong, for a person: each column's account, joined by "; ".
    public var reason: String {
        columns.map(\.account).joined(separator: "; ")
    }

    /// Whether the column `name` could not be read.
    public func covers(_ name: String) -> Bool {
        columns.contains { $0.name == name }
    }
}
