/// What of a stored download could not be read back: a value changed behind Haul's back (by
/// sqlite3, a failing disk) that is of the wrong type or not what Haul writes there.
///
/// A damaged item is still listed and can be removed or cancelled, but never runs: a run fails it
/// with `reason`, and the rest of the queue goes on.
package struct RowDamage: Sendable, Equatable {
    /// One column that could not be read.
    package struct Column: Sendable, Equatable {
        /// The column's name in the `downloads` table.
        package let name: String
        /// What is wrong with it, for a person: "its stored options are damaged: …".
        package let account: String
    }

    /// The columns that could not be read, in the order they were read.
    package let columns: [Column]

    /// What is wrong, for a person: each column's account, joined by "; ".
    package var reason: String {
        columns.map(\.account).joined(separator: "; ")
    }

    /// Whether the column `name` could not be read.
    package func covers(_ name: String) -> Bool {
        columns.contains { $0.name == name }
    }
}
