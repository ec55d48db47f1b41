import Foundation

/// A connection's statements compiled once and run again by `execute(_:_:)`, `query` and the
/// transactions: a queue run repeats the same few statements for every download, and compiling
/// them was a sixth of its CPU time. Used by its connection's one thread at a time.
final class StatementCache {
    private var statements: [String: Statement] = [:]

    /// The compiled statement for `sql` (compiled by `compile` on first use), rewound and ready to
    /// bind. Not for statements a caller keeps: one statement per text at a time.
    func statement(_ sql: String, compile: (String) throws -> Statement) throws -> Statement {
        if let statement = statements[sql] {
            try statement.reset()
            return statement
        }
        let statement = try compile(sql)
        if statements.count >= 64 { statements.removeAll() }
        statements[sql] = statement
        return statement
    }

    /// Finalizes every statement (before the connection closes).
    func removeAll() {
        statements.removeAll()
    }
}

extension SQLiteConnection {
    /// Runs the cached statement for `sql` with `parameters`: its rows, or none.
    func runReusable(_ sql: String, _ parameters: [StoreValue], collecting: Bool) throws -> [Row] {
        let statement = try statementCache.statement(sql) { try prepare($0, cached: true) }
        // Rewound after use too: a finished statement holds no read lock, whatever happens next.
        defer { try? statement.reset() }
        try statement.bind(parameters)
        if collecting { return try statement.rows() }
        try statement.run()
        return []
    }
}
