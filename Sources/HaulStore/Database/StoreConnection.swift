/// A connection of a queue database inside one transaction, as the queue's logic uses it: a
/// statement of the database's dialect (see `QueueDialect`) with typed parameters, its rows or the
/// number of rows it changed. SQLite's and PostgreSQL's connections are the two.
package protocol StoreConnection {
    /// Runs one statement and returns its rows.
    func rows(_ sql: String, _ parameters: [StoreValue]) throws -> [Row]
    /// Runs one statement and returns how many rows it inserted, updated or deleted.
    @discardableResult
    func run(_ sql: String, _ parameters: [StoreValue]) throws -> Int
}

extension StoreConnection {
    /// The first row of a statement, nil when it has none.
    package func row(_ sql: String, _ parameters: [StoreValue]) throws -> Row? {
        try rows(sql, parameters).first
    }
}
