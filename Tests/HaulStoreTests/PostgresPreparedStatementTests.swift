import Foundation
import HaulCore
import HaulTestSupport
import Testing

@testable import HaulStore

/// The PostgreSQL connection prepares each statement once (the server parses and plans it once
/// per connection, not once per call), and a prepared statement whose table changed shape under
/// it (another process migrated the schema) costs a reconnection, never a failed call.
@Suite("PostgreSQL: prepared statements", .serialized)
struct PostgresPreparedStatementTests {
    @Test(
        """
        PostgreSQL: GIVEN a statement run three times with other values WHEN the server lists this \
        connection's prepared statements THEN it is there once, and each run answered for its own values
        """)
    func aStatementIsPreparedOnce() throws {
        let cluster = try PostgresCluster()
        defer { cluster.stop() }
        let connection = try PGConnection(cluster.uri())
        try connection.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT)")
        for id in 1...3 {
            try connection.run("INSERT INTO t (id, name) VALUES ($1, $2)", [.integer(Int64(id)), .text("n\(id)")])
        }
        for id in 1...3 {
            let rows = try connection.rows("SELECT name FROM t WHERE id = $1", [.integer(Int64(id))])
            #expect(rows.map { $0.string("name") } == ["n\(id)"])
        }
        let listed = try connection.rows("SELECT statement FROM pg_prepared_statements WHERE statement LIKE $1", [.text("SELECT name FROM t%")])
        #expect(listed.count == 1)
        let inserts = try connection.rows("SELECT count(*) AS n FROM pg_prepared_statements WHERE statement LIKE $1", [.text("INSERT INTO t%")])
        #expect(inserts.first?.int64("n") == 1)
    }

    @Test(
        """
        PostgreSQL: GIVEN a prepared SELECT * WHEN another connection adds a column to its table \
        THEN the next transaction still answers, with the new column
        """)
    func aSchemaChangedUnderAPreparedStatementReconnects() throws {
        let cluster = try PostgresCluster()
        defer { cluster.stop() }
        let database = try PGDatabase(conninfo: cluster.uri(), reconnectSeconds: 5)
        try database.withConnection { connection in
            try connection.execute("CREATE TABLE t (id BIGINT PRIMARY KEY)")
            try connection.run("INSERT INTO t (id) VALUES ($1)", [.integer(1)])
        }
        let select = "SELECT * FROM t WHERE id = $1"
        let before = try database.transaction { connection, _ in try connection.rows(select, [.integer(1)]) }
        #expect(before.count == 1)
        // Another process migrates the table.
        _ = try cluster.psql("ALTER TABLE t ADD COLUMN extra TEXT DEFAULT 'x'")
        let after = try database.transaction { connection, _ in try connection.rows(select, [.integer(1)]) }
        #expect(after.first?.string("extra") == "x")
    }
}
