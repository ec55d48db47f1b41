import HaulTestSupport
import Testing

@testable import HaulStore

@Suite("A cached statement's column names")
struct StatementColumnNamesTests {
    @Test("GIVEN a cached SELECT * run once WHEN another connection adds a column and it runs again THEN its rows name the new column")
    func aSchemaChangeNamesTheNewColumns() throws {
        let directory = try TemporaryDirectory(prefix: "haul-columns")
        let path = directory.file("store.sqlite")
        let db = try SQLiteConnection(path: path)
        try db.execute("CREATE TABLE t(a, b); INSERT INTO t VALUES (1, 2)")
        #expect(try db.query("SELECT * FROM t").first?.columnNames == ["a", "b"])
        #expect(try db.query("SELECT * FROM t").first?.columnNames == ["a", "b"])

        let other = try SQLiteConnection(path: path)
        try other.execute("ALTER TABLE t ADD COLUMN c DEFAULT 3")
        let row = try db.query("SELECT * FROM t").first
        #expect(row?.columnNames == ["a", "b", "c"])
        #expect(row?["c"] == .integer(3))
    }

    @Test("GIVEN a cached statement WHEN a column is renamed and it runs again THEN its rows carry the new name, not the one of the run before")
    func aRenamedColumnIsReadAgain() throws {
        let directory = try TemporaryDirectory(prefix: "haul-columns")
        let path = directory.file("store.sqlite")
        let db = try SQLiteConnection(path: path)
        try db.execute("CREATE TABLE t(a, b); INSERT INTO t VALUES (1, 2)")
        #expect(try db.query("SELECT * FROM t").first?.columnNames == ["a", "b"])

        let other = try SQLiteConnection(path: path)
        try other.execute("ALTER TABLE t RENAME COLUMN b TO z")
        let row = try db.query("SELECT * FROM t").first
        #expect(row?.columnNames == ["a", "z"])
        #expect(row?["z"] == .integer(2))
    }
}
