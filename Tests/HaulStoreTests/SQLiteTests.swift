import Foundation
import HaulTestSupport
import Synchronization
import Testing

@testable import HaulStore

#if canImport(Glibc)
    import Glibc
#endif

// SQLite result codes the assertions compare against (from sqlite3.h).
private let sqliteError: Int32 = 1
private let sqliteBusy: Int32 = 5
private let sqliteConstraintPrimaryKey: Int32 = 1555
private let sqliteNotADatabase: Int32 = 26

private struct Boom: Error, Equatable {}

/// A fresh temporary directory and the path of a database file inside it (not created).
/// Callers keep the directory alive to the end of the test with `withExtendedLifetime`: ARC may
/// otherwise release it (and delete the files) right after its last use.
private func freshDatabasePath() throws -> (TemporaryDirectory, String) {
    let directory = try TemporaryDirectory(prefix: "haul-sqlite")
    return (directory, directory.file("store.sqlite"))
}

private func count(_ db: SQLiteConnection, _ table: String) throws -> Int64 {
    try db.query("SELECT count(*) AS n FROM \(table)").first?.int64("n") ?? -1
}

private func tableNames(_ db: SQLiteConnection) throws -> Set<String> {
    Set(try db.query("SELECT name FROM sqlite_master WHERE type = 'table'").compactMap { $0.string("name") })
}

/// Every SQLite-layer test, grouped so `swift test --filter SQLiteTests` selects them all.
@Suite("SQLite layer")
struct SQLiteTests {}

// MARK: - Opening

extension SQLiteTests {
    @Suite("SQLiteConnection opening")
    struct Opening {
        @Test("GIVEN no file WHEN a connection opens the path THEN it creates a database configured for durability")
        func opensAndCreates() throws {
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            #expect(!FileManager.default.fileExists(atPath: path))

            let db = try SQLiteConnection(path: path)
            try db.execute("CREATE TABLE t(x)")

            #expect(FileManager.default.fileExists(atPath: path))
            #expect(try db.query("PRAGMA journal_mode").first?[0] == .text("wal"))
            #expect(try db.query("PRAGMA synchronous").first?[0] == .integer(2))  // FULL
            #expect(try db.query("PRAGMA foreign_keys").first?[0] == .integer(1))
            #expect(try db.query("PRAGMA busy_timeout").first?[0] == .integer(5000))
        }

        @Test("GIVEN a written database WHEN it is closed THEN the file header records WAL mode and writes went through a WAL")
        func walIsActuallyOn() throws {
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            do {
                let db = try SQLiteConnection(path: path)
                try db.execute("CREATE TABLE t(x); INSERT INTO t VALUES (1)")
                #expect(FileManager.default.fileExists(atPath: path + "-wal"))
            }
            let header = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)).prefix(20))
            #expect(header.count == 20)
            // Bytes 18 and 19 are the file format write/read versions: 2 means WAL, 1 rollback journal.
            #expect(header.count == 20 && header[18] == 2 && header[19] == 2)
        }

        @Test("GIVEN a custom busy timeout WHEN opening THEN the connection uses it")
        func customBusyTimeout() throws {
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            let db = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 250)
            #expect(try db.query("PRAGMA busy_timeout").first?[0] == .integer(250))
        }

        @Test("GIVEN a file of random bytes WHEN opened THEN it fails as corrupt and the file is unchanged")
        func refusesForeignFile() throws {
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            let original = Data(TestData.bytes(count: 8192, seed: 42))
            try original.write(to: URL(fileURLWithPath: path))

            let error = #expect(throws: SQLiteError.self) { try SQLiteConnection(path: path) }
            #expect(error?.isCorrupt == true)
            #expect(error?.resultCode == sqliteNotADatabase)
            #expect(error?.description.contains(path) == true)

            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == original)
            #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
            #expect(!FileManager.default.fileExists(atPath: path + "-journal"))

            // The queue opens the same way.
            #expect(throws: SQLiteError.self) { try DatabaseQueue(path: path) }
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == original)
        }

        @Test("GIVEN a directory that does not exist WHEN opening a path in it THEN it throws a non-corrupt error naming the path")
        func missingDirectory() throws {
            let (directory, _) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            let path = directory.file("missing/store.sqlite")
            let error = #expect(throws: SQLiteError.self) { try SQLiteConnection(path: path) }
            #expect(error?.isCorrupt == false)
            #expect(error?.description.contains(path) == true)
        }

        @Test("GIVEN a healthy database WHEN its integrity is checked THEN it passes, and once an index page is overwritten THEN it fails as corrupt")
        func integrityCheckTellsHealthyFromDamaged() throws {
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            let pageSize: Int
            let indexRoot: Int
            do {
                let db = try SQLiteConnection(path: path)
                try db.execute(
                    "CREATE TABLE t(x UNIQUE); "
                        + "INSERT INTO t WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) SELECT i FROM n")
                // THEN the healthy database passes
                try db.checkIntegrity()
                pageSize = try #require(try db.query("PRAGMA page_size").first?[0].int)
                indexRoot = try #require(
                    try db.query("SELECT rootpage FROM sqlite_master WHERE type = 'index' AND tbl_name = 't'").first?[0].int)
                // Everything into the main file, so the damage below is what the next connection reads.
                try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            }

            // WHEN the index's root page is overwritten with garbage
            let file = try FileHandle(forUpdating: URL(fileURLWithPath: path))
            try file.seek(toOffset: UInt64((indexRoot - 1) * pageSize))
            try file.write(contentsOf: Data(repeating: 0xA5, count: pageSize))
            try file.close()

            // THEN the check fails, as corrupt
            let db = try SQLiteConnection(path: path)
            let error = #expect(throws: SQLiteError.self) { try db.checkIntegrity() }
            #expect(error?.isCorrupt == true, "\(String(describing: error))")
        }
    }
}

// MARK: - Values and statements

extension SQLiteTests {
    @Suite("SQLite statements")
    struct Statements {
        @Test("GIVEN every value type incl. NULL and empty blobs WHEN stored and read back THEN each comes back exactly")
        func roundTripsEveryType() throws {
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            let db = try SQLiteConnection(path: path)
            try db.execute("CREATE TABLE v(id INTEGER PRIMARY KEY, value)")

            let samples: [StoreValue] = [
                .integer(0), .integer(Int64.max), .integer(Int64.min), StoreValue(Int(-42)),
                .real(3.5), .real(-0.0), .real(1e308), .real(Double.leastNonzeroMagnitude),
                .text(""), .text("héllo wörld ✓ 🚀"), .text("nul\u{0}inside"),
                .blob([]), .blob([0]), .blob([0, 255, 0, 1]), StoreValue(Data([9, 8, 7])),
                StoreValue(true), StoreValue(false), .null,
            ]
            let insert = try db.prepare("INSERT INTO v(id, value) VALUES (?, ?)")
            for (index, sample) in samples.enumerated() {
                try insert.reset()
                try insert.bind(index, at: 1)
                try insert.bind(sample, at: 2)
                #expect(try insert.step() == false)
            }

            let rows = try db.query("SELECT id, value, typeof(value) AS type FROM v ORDER BY id")
            #expect(rows.count == samples.count)
            for row in rows {
                guard let id = row.int("id") else {
                    Issue.record("row without id: \(row)")
                    continue
                }
                #expect(row["value"] == samples[id], "sample \(id)")
            }
            // An empty blob is a zero-length blob, never NULL; an empty string is text.
            #expect(rows[11].string("type") == "blob")  // sample 11 is .blob([])
            #expect(rows[8].string("type") == "text")  // sample 8 is .text("")
            #expect(rows[17].string("type") == "null")
            #expect(rows[5].double("value").map { $0.sign == .minus } == true)

            // The typed getters of Statement agree, including nil for NULL.
            let select = try db.prepare("SELECT value FROM v WHERE id = :id")
            func read(_ id: Int) throws -> Statement {
                try select.reset()
                try select.bind(.integer(Int64(id)), named: ":id")
                #expect(try select.step())
                return select
            }
            #expect(try read(1).int64(0) == Int64.max)
            #expect(try read(2).int64(0) == Int64.min)
            #expect(try read(3).int(0) == -42)
            #expect(try read(4).double(0) == 3.5)
            #expect(try read(10).string(0) == "nul\u{0}inside")
            #expect(try read(8).string(0) == "")
            #expect(try read(11).blob(0) == [])
            #expect(try read(11).isNull(0) == false)
            #expect(try read(13).blob(0) == [0, 255, 0, 1])
            #expect(try read(15).bool(0) == true)
            #expect(try read(16).bool(0) == false)
            #expect(try read(17).isNull(0))
            #expect(try read(17).string(0) == nil)
            #expect(try read(17).blob(0) == nil)
        }

        @Test("GIVEN typed overloads and named parameters in all three prefixes WHEN bound THEN each lands in its column")
        func bindsByNameAndTypedOverloads() throws {
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            let db = try SQLiteConnection(path: path)
            try db.execute("CREATE TABLE t(a, b, c, d, e, f, g, h)")
            let insert = try db.prepare("INSERT INTO t VALUES (:a, @b, $c, ?4, ?5, ?6, ?7, ?8)")
            try insert.bind(.text("named"), named: ":a")
            try insert.bind(.integer(2), named: "@b")
            try insert.bind(.real(2.5), named: "$c")
            try insert.bind(Int64(7), at: 4)
            try insert.bind("text", at: 5)
            try insert.bind([UInt8]([1, 2]), at: 6)
            try insert.bind(true, at: 7)
            try insert.bindNull(at: 8)
            try insert.run()

            let row = try #require(try db.query("SELECT * FROM t").first)
            #expect(row.values == [.text("named"), .integer(2), .real(2.5), .integer(7), .text("text"), .blob([1, 2]), .integer(1), .null])
            #expect(row.bool("g") == true)
            #expect(row.isNull("h"))
            #expect(row["A"] == .text("named"))  // column names match case-insensitively, as in SQL
            #expect(row["missing"] == nil)

            #expect(throws: SQLiteError.self) { try insert.bind(.null, named: ":nope") }
            #expect(throws: SQLiteError.self) { try insert.bind(.null, at: 9) }
            #expect(throws: SQLiteError.self) { try db.query("SELECT ?, ?", [1]) }
        }

        @Test("GIVEN invalid SQL WHEN prepared THEN the error carries that SQL and SQLite's message")
        func prepareErrorCarriesSQL() throws {
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            let db = try SQLiteConnection(path: path)

            let error = #expect(throws: SQLiteError.self) { try db.prepare("SELEC 1") }
            #expect(error?.sql == "SELEC 1")
            #expect(error?.resultCode == sqliteError)
            #expect(error?.message.contains("syntax error") == true)
            #expect(error?.description.contains("SELEC 1") == true)
            #expect(error?.isBusy == false && error?.isCorrupt == false)
        }

        @Test("GIVEN a duplicate primary key WHEN the insert steps THEN the error has the extended code and the SQL")
        func stepErrorCarriesSQL() throws {
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            let db = try SQLiteConnection(path: path)
            try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY)")
            let sql = "INSERT INTO t(id) VALUES (?)"
            try db.execute(sql, [1])

            let error = #expect(throws: SQLiteError.self) { try db.execute(sql, [1]) }
            #expect(error?.sql == sql)
            #expect(error?.extendedResultCode == sqliteConstraintPrimaryKey)
            #expect(error?.description.contains(sql) == true)
        }

        @Test("GIVEN several statements whose second fails WHEN executed THEN the error names the failing one and later ones do not run")
        func multiStatementErrorNamesStatement() throws {
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            let db = try SQLiteConnection(path: path)

            let error = #expect(throws: SQLiteError.self) {
                try db.execute("CREATE TABLE a(x);\n INSERT INTO nope VALUES (1); CREATE TABLE b(x)")
            }
            #expect(error?.sql?.hasPrefix("INSERT INTO nope VALUES (1);") == true)
            #expect(try tableNames(db) == ["a"])
        }

        @Test("GIVEN two statements in one string WHEN prepared THEN it is refused rather than silently running only the first")
        func prepareRefusesTrailingStatement() throws {
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            let db = try SQLiteConnection(path: path)
            #expect(throws: SQLiteError.self) { try db.prepare("SELECT 1; SELECT 2") }
            #expect(try db.prepare("SELECT 1;  ").step())
        }

        @Test("GIVEN a statement whose step failed WHEN reset, rebound and stepped THEN it runs again")
        func reuseAfterFailure() throws {
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            let db = try SQLiteConnection(path: path)
            try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY)")
            let insert = try db.prepare("INSERT INTO t(id) VALUES (?)")
            try insert.bind(1, at: 1)
            try insert.run()
            try insert.reset()
            #expect(throws: SQLiteError.self) { try insert.run() }

            try insert.reset()
            try insert.bind(2, at: 1)
            try insert.run()

            #expect(db.lastInsertRowID == 2)
            #expect(db.changes == 1)
            #expect(try db.query("SELECT id FROM t ORDER BY id").map { $0[0] } == [1, 2])
        }
    }
}

// MARK: - Transactions

extension SQLiteTests {
    @Suite("SQLite transactions")
    struct Transactions {
        @Test("GIVEN a transaction body that throws WHEN it runs THEN its writes are rolled back and the error is rethrown")
        func rollbackOnThrow() throws {
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            let db = try SQLiteConnection(path: path)
            try db.execute("CREATE TABLE t(x)")

            #expect(throws: Boom.self) {
                try db.transaction {
                    try db.execute("INSERT INTO t VALUES (1), (2)")
                    #expect(db.isInTransaction)
                    throw Boom()
                }
            }
            #expect(!db.isInTransaction)
            #expect(try count(db, "t") == 0)

            let value = try db.transaction {
                try db.execute("INSERT INTO t VALUES (3)")
                return "done"
            }
            #expect(value == "done")
            #expect(try count(db, "t") == 1)
        }

        @Test("GIVEN a nested transaction that throws WHEN the outer one commits THEN only the inner writes are undone")
        func nestedTransactionIsASavepoint() throws {
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            let db = try SQLiteConnection(path: path)
            try db.execute("CREATE TABLE t(x)")

            try db.transaction {
                try db.execute("INSERT INTO t VALUES (1)")
                #expect(throws: Boom.self) {
                    try db.transaction {
                        try db.execute("INSERT INTO t VALUES (2)")
                        throw Boom()
                    }
                }
                try db.execute("INSERT INTO t VALUES (3)")
            }
            #expect(try db.query("SELECT x FROM t ORDER BY x").map { $0[0] } == [1, 3])
        }

        @Test("GIVEN a queue WHEN a write throws THEN nothing of it is stored, and a later read sees committed writes only")
        func queueWriteRollsBack() throws {
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            let queue = try DatabaseQueue(path: path)
            try queue.write { db in try db.execute("CREATE TABLE t(x)") }

            #expect(throws: Boom.self) {
                try queue.write { db in
                    try db.execute("INSERT INTO t VALUES (1)")
                    throw Boom()
                }
            }
            try queue.write { db in try db.execute("INSERT INTO t VALUES (2)") }
            let values = try queue.read { db in try db.query("SELECT x FROM t").map { $0[0] } }
            #expect(values == [2])
        }

        @Test("GIVEN many threads WHEN each writes through one queue THEN every write lands exactly once")
        func queueSerializesConcurrentWrites() throws {
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            let queue = try DatabaseQueue(path: path)
            try queue.write { db in try db.execute("CREATE TABLE counter(n INTEGER NOT NULL); INSERT INTO counter VALUES (0)") }
            let failures = Mutex<[String]>([])

            DispatchQueue.concurrentPerform(iterations: 8) { _ in
                for _ in 0..<25 {
                    do {
                        try queue.write { db in
                            // Read-modify-write: lost updates would show if two writers overlapped.
                            let current = try db.query("SELECT n FROM counter").first?.int64("n") ?? 0
                            try db.execute("UPDATE counter SET n = ?", [.integer(current + 1)])
                        }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
            #expect(failures.withLock { $0 } == [])
            #expect(try queue.read { db in try db.query("SELECT n FROM counter").first?.int64("n") } == 200)
        }
    }
}

// MARK: - Two connections

extension SQLiteTests {
    @Suite("SQLite locking between connections")
    struct Locking {
        @Test("GIVEN one connection holds a write transaction WHEN another writes THEN it waits and succeeds after the commit")
        func busyTimeoutWaitsForWriter() async throws {
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            let holder = try SQLiteConnection(path: path)
            try holder.execute("CREATE TABLE t(x)")
            try holder.execute("BEGIN IMMEDIATE; INSERT INTO t VALUES (1)")

            let (aboutToWrite, signal) = AsyncStream<Void>.makeStream()
            let waiter = Task.detached { () throws -> Duration in
                let other = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 10_000)
                let clock = ContinuousClock()
                signal.yield()
                let start = clock.now
                try other.execute("INSERT INTO t VALUES (2)")
                return clock.now - start
            }
            for await _ in aboutToWrite { break }
            try await Task.sleep(for: .milliseconds(400))
            try holder.execute("COMMIT")

            let waited = try await waiter.value
            #expect(waited >= .milliseconds(300), "the second writer should have been blocked until the commit")
            #expect(try holder.query("SELECT x FROM t ORDER BY x").map { $0[0] } == [1, 2])
        }

        @Test("GIVEN one connection holds a write transaction WHEN another with no busy timeout writes THEN it fails as busy")
        func zeroTimeoutFailsBusy() throws {
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            let holder = try SQLiteConnection(path: path)
            try holder.execute("CREATE TABLE t(x)")
            let other = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 0)
            try holder.execute("BEGIN IMMEDIATE; INSERT INTO t VALUES (1)")

            let error = #expect(throws: SQLiteError.self) { try other.execute("INSERT INTO t VALUES (2)") }
            #expect(error?.isBusy == true)
            #expect(error?.resultCode == sqliteBusy)

            try holder.execute("COMMIT")
            try other.execute("INSERT INTO t VALUES (2)")
            #expect(try count(other, "t") == 2)
        }

        @Test(
            "GIVEN a database not yet in WAL mode, locked by a writer WHEN another connection opens it THEN the switch to WAL waits for the writer instead of failing as busy"
        )
        func switchToWALWaitsForAnotherConnection() async throws {
            // GIVEN a rollback-journal database with a write transaction open (as while another
            // process sets up a new store)
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            let holder = try SQLiteConnection(path: path)
            try holder.execute("CREATE TABLE t(x)")
            #expect(try holder.query("PRAGMA journal_mode=DELETE").first?[0] == .text("delete"))
            try holder.execute("BEGIN IMMEDIATE; INSERT INTO t VALUES (1)")

            // WHEN another connection opens it, and the writer commits 300 ms later
            let opener = Task.detached { () throws -> String? in
                let other = try SQLiteConnection(path: path)
                return try other.query("PRAGMA journal_mode").first?[0].string
            }
            try await Task.sleep(for: .milliseconds(300))
            try holder.execute("COMMIT")

            // THEN it opened, in WAL mode (SQLite takes that lock without the busy handler)
            #expect(try await opener.value == "wal")
        }

        @Test("GIVEN a 5 s budget WHEN every wait of the busy backoff is taken THEN they start at 1 ms, double up to 64 ms and add up to the budget")
        func busyBackoffSpendsItsBudget() {
            var backoff = BusyBackoff(budget: 5000)
            var delays: [Int] = []
            while let delay = backoff.nextDelay() { delays.append(delay) }

            #expect(Array(delays.prefix(8)) == [1, 2, 4, 8, 16, 32, 64, 64])
            #expect(delays.allSatisfy { $0 > 0 && $0 <= 64 })
            #expect(delays.reduce(0, +) == 5000)
            var none = BusyBackoff(budget: 0)
            #expect(none.nextDelay() == nil)
        }
    }
}

// MARK: - Damaged values and a full disk

extension SQLiteTests {
    @Suite("SQLite damaged rows and a full disk")
    struct DamagedValues {
        @Test("GIVEN a row with a good value, a NULL and a value of the wrong class WHEN read as required THEN only the good one is returned")
        func requiredColumnsRefuseDamagedValues() throws {
            let row = Row(
                columnNames: ["good", "missing", "wrong", "bytes"],
                values: [.integer(7), .null, .text("seven"), .blob([0])])

            #expect(try row.requiredInt64("good") == 7)
            #expect(try row.requiredInt("good") == 7)
            #expect(try row.requiredDouble("good") == 7)
            #expect(try row.requiredBool("good") == true)
            #expect(try row.requiredString("wrong") == "seven")
            #expect(try row.requiredBlob("bytes") == [0])

            // A NULL or a value of another class is a damaged row, never a 0 or "".
            let null = #expect(throws: SQLiteError.self) { try row.requiredInt64("missing") }
            #expect(null?.isTypeMismatch == true)
            #expect(null?.message == "column missing holds null where an integer is required: the row is damaged")
            let wrongClass = #expect(throws: SQLiteError.self) { try row.requiredDouble("wrong") }
            #expect(wrongClass?.isTypeMismatch == true)
            #expect(throws: SQLiteError.self) { try row.requiredString("bytes") }
            #expect(throws: SQLiteError.self) { try row.requiredBlob("missing") }

            // A column the query did not select is a mistake in the SQL, told apart from damage.
            let absent = #expect(throws: SQLiteError.self) { try row.requiredString("nope") }
            #expect(absent?.isTypeMismatch == false)
            #expect(absent?.message.contains("no column nope") == true)
        }

        @Test("GIVEN a database at its size limit WHEN a write needs more pages THEN the error says the disk is full")
        func fullDatabaseIsDiskFull() throws {
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            let db = try SQLiteConnection(path: path)
            try db.execute("CREATE TABLE t(b BLOB)")
            let pages = try #require(try db.query("PRAGMA page_count").first?[0].int64)
            // A page limit stands in for a full disk: SQLite reports both as SQLITE_FULL.
            try db.execute("PRAGMA max_page_count = \(pages + 2)")

            let error = #expect(throws: SQLiteError.self) {
                try db.execute("INSERT INTO t VALUES (?)", [.blob([UInt8](repeating: 1, count: 1 << 20))])
            }

            #expect(error?.isDiskFull == true, "\(String(describing: error))")
            #expect(error?.isCorrupt == false)
            #expect(try count(db, "t") == 0)
        }
    }
}

// MARK: - Migrations

/// Records which migrations ran, from the `@Sendable` migration closures.
private final class MigrationLog: Sendable {
    private let names = Mutex<[String]>([])
    func record(_ name: String) { names.withLock { $0.append(name) } }
    var ran: [String] { names.withLock { $0 } }
}

private func downloadsMigrator(log: MigrationLog, includeSecond: Bool, failSecond: Bool = false) -> Migrator {
    var migrator = Migrator()
    migrator.registerMigration("v1-create-downloads") { db in
        log.record("v1-create-downloads")
        try db.execute("CREATE TABLE downloads(id INTEGER PRIMARY KEY, url TEXT NOT NULL)")
    }
    if includeSecond {
        migrator.registerMigration("v2-add-etag") { db in
            log.record("v2-add-etag")
            try db.execute("ALTER TABLE downloads ADD COLUMN etag TEXT; CREATE TABLE chunks(download_id INTEGER)")
            if failSecond { throw Boom() }
        }
    }
    return migrator
}

private func userVersion(_ db: SQLiteConnection) throws -> Int64? {
    try db.query("PRAGMA user_version").first?[0].int64
}

extension SQLiteTests {
    @Suite("Migrator")
    struct Migrations {
        @Test("GIVEN an empty database WHEN migrated THEN every migration runs in order and is recorded")
        func migratesEmptyDatabase() throws {
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            let queue = try DatabaseQueue(path: path)
            let log = MigrationLog()
            let migrator = downloadsMigrator(log: log, includeSecond: true)

            try migrator.migrate(queue)

            #expect(log.ran == ["v1-create-downloads", "v2-add-etag"])
            try queue.read { db in
                #expect(try migrator.appliedMigrations(db) == ["v1-create-downloads", "v2-add-etag"])
                #expect(try userVersion(db) == 2)
                #expect(try tableNames(db).isSuperset(of: ["downloads", "chunks", "schema_migrations"]))
                #expect(try migrator.isUpToDate(db))
                let appliedAt = try db.query("SELECT applied_at FROM schema_migrations").compactMap { $0.double("applied_at") }
                #expect(appliedAt.count == 2 && appliedAt.allSatisfy { $0 > 1_600_000_000 })
            }
        }

        @Test("GIVEN a migrated database WHEN migrated again THEN nothing runs and nothing changes")
        func migratingTwiceIsNoOp() throws {
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            let queue = try DatabaseQueue(path: path)
            let log = MigrationLog()
            let migrator = downloadsMigrator(log: log, includeSecond: true)
            try migrator.migrate(queue)
            let before = try queue.read { db in try db.query("SELECT * FROM schema_migrations ORDER BY name") }

            try migrator.migrate(queue)

            #expect(log.ran == ["v1-create-downloads", "v2-add-etag"])
            #expect(try queue.read { db in try db.query("SELECT * FROM schema_migrations ORDER BY name") } == before)
            #expect(try queue.read { db in try userVersion(db) } == 2)
        }

        @Test("GIVEN an older database with only the first migration and data WHEN a newer migrator runs THEN only the second runs and data is kept")
        func upgradesOlderDatabase() throws {
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            do {
                let db = try SQLiteConnection(path: path)
                try downloadsMigrator(log: MigrationLog(), includeSecond: false).migrate(db)
                try db.execute("INSERT INTO downloads(url) VALUES ('https://example.com/a')")
                #expect(try userVersion(db) == 1)
            }

            let db = try SQLiteConnection(path: path)
            let log = MigrationLog()
            try downloadsMigrator(log: log, includeSecond: true).migrate(db)

            #expect(log.ran == ["v2-add-etag"])
            #expect(try userVersion(db) == 2)
            let row = try #require(try db.query("SELECT url, etag FROM downloads").first)
            #expect(row.string("url") == "https://example.com/a")
            #expect(row.isNull("etag"))
        }

        @Test("GIVEN a database from a newer Haul WHEN an older migrator runs THEN it throws naming the unknown migration and changes nothing")
        func refusesNewerDatabase() throws {
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            let db = try SQLiteConnection(path: path)
            try downloadsMigrator(log: MigrationLog(), includeSecond: true).migrate(db)

            let log = MigrationLog()
            let error = #expect(throws: MigrationError.self) {
                try downloadsMigrator(log: log, includeSecond: false).migrate(db)
            }
            #expect(error?.unknownMigrations == ["v2-add-etag"])
            #expect(error?.description.contains("newer version of Haul") == true)
            #expect(log.ran.isEmpty)
            #expect(try userVersion(db) == 2)
            #expect(!db.isInTransaction)

            // Even a migrator with nothing registered refuses it.
            #expect(throws: MigrationError.self) { try Migrator().migrate(db) }
        }

        @Test("GIVEN a migration that throws WHEN migrating THEN earlier migrations stay applied and the failing one leaves no trace")
        func failingMigrationRollsBack() throws {
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            let db = try SQLiteConnection(path: path)
            let log = MigrationLog()

            #expect(throws: Boom.self) {
                try downloadsMigrator(log: log, includeSecond: true, failSecond: true).migrate(db)
            }

            #expect(log.ran == ["v1-create-downloads", "v2-add-etag"])
            #expect(try Migrator().appliedMigrations(db) == ["v1-create-downloads"])
            #expect(try userVersion(db) == 1)
            #expect(!(try tableNames(db).contains("chunks")))
            #expect(try db.query("SELECT name FROM pragma_table_info('downloads')").compactMap { $0.string("name") } == ["id", "url"])
        }

        @Test("GIVEN a recorded migration whose name reads back as a blob WHEN migrating THEN it fails as a damaged row and runs nothing again")
        func damagedMigrationRecordIsRefused() throws {
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            let db = try SQLiteConnection(path: path)
            try downloadsMigrator(log: MigrationLog(), includeSecond: false).migrate(db)
            // TEXT affinity leaves a blob a blob: the row no longer holds a readable name.
            try db.execute("UPDATE schema_migrations SET name = CAST(name AS BLOB)")

            let log = MigrationLog()
            let error = #expect(throws: SQLiteError.self) {
                try downloadsMigrator(log: log, includeSecond: true).migrate(db)
            }

            #expect(error?.isTypeMismatch == true, "\(String(describing: error))")
            #expect(log.ran.isEmpty)
            #expect(try userVersion(db) == 1)
            #expect(!(try tableNames(db).contains("chunks")))
        }
    }
}

// MARK: - Crash safety

extension SQLiteTests {
    @Suite("SQLite crash safety")
    struct CrashSafety {
        /// Inserts batches of 10 rows, one transaction per batch, until killed.
        static let writerScript = """
            import os, sqlite3, sys
            con = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=FULL")
            batch = 0
            while True:
                con.execute("BEGIN IMMEDIATE")
                for i in range(10):
                    con.execute("INSERT INTO rows(batch, payload) VALUES (?, ?)", (batch, os.urandom(200)))
                con.execute("COMMIT")
                batch += 1
            """

        @Test(
            "GIVEN a writer killed with SIGKILL mid-loop WHEN the database is reopened THEN it is intact and holds only whole transactions",
            .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "needs /usr/bin/python3"))
        func survivesKilledWriter() throws {
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            do {
                let db = try SQLiteConnection(path: path)
                try db.execute("CREATE TABLE rows(id INTEGER PRIMARY KEY, batch INTEGER NOT NULL, payload BLOB)")
            }

            let stderrPath = directory.file("writer.stderr")
            _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
            let stderrHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
            defer { try? stderrHandle.close() }
            let writer = Process()
            writer.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            writer.arguments = ["-c", Self.writerScript, path]
            writer.standardInput = FileHandle.nullDevice
            writer.standardOutput = FileHandle.nullDevice
            writer.standardError = stderrHandle
            try writer.run()
            defer {
                if writer.isRunning { kill(writer.processIdentifier, SIGKILL) }
            }

            // Wait until the writer has committed a few batches (no connection is kept open meanwhile, so the
            // reopen below is the first connection after the crash and must recover the WAL itself).
            let deadline = Date().addingTimeInterval(20)
            var seen: Int64 = 0
            while seen < 30, writer.isRunning, Date() < deadline {
                Thread.sleep(forTimeInterval: 0.05)
                seen = try count(SQLiteConnection(path: path), "rows")
            }
            try #require(writer.isRunning, "the writer exited early: \((try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "")")
            try #require(seen >= 30, "the writer committed only \(seen) rows in 20 s")
            Thread.sleep(forTimeInterval: 0.5)
            kill(writer.processIdentifier, SIGKILL)
            writer.waitUntilExit()
            #expect(writer.terminationReason == .uncaughtSignal)
            #expect(writer.terminationStatus == SIGKILL)

            let db = try SQLiteConnection(path: path)
            try db.checkIntegrity()
            let total = try count(db, "rows")
            #expect(total >= seen)
            #expect(total % 10 == 0, "a transaction was torn: \(total) rows")
            let partialBatches = try db.query("SELECT batch FROM rows GROUP BY batch HAVING count(*) != 10")
            #expect(partialBatches.isEmpty)
            let batches = try db.query("SELECT count(DISTINCT batch) AS n, max(batch) AS top FROM rows").first
            #expect(batches?.int64("n") == total / 10)
            #expect(batches?.int64("top") == total / 10 - 1)
        }
    }
}

extension SQLiteTests {
    @Suite("SQLite statement cache")
    struct StatementCache {
        @Test(
            "GIVEN one statement text run again and again WHEN its parameters change, a run fails, or a transaction rolls back THEN every run sees only its own parameters and the database"
        )
        func aCachedStatementRunsAgainCleanly() throws {
            let (directory, path) = try freshDatabasePath()
            defer { withExtendedLifetime(directory) {} }
            let db = try SQLiteConnection(path: path)
            try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
            for id in 1...100 {
                try db.execute("INSERT INTO t(id, name) VALUES (?, ?)", [.integer(Int64(id)), .text("n\(id)")])
            }
            // The same query text with other parameters reads other rows.
            for id in [7, 42, 99] {
                let rows = try db.query("SELECT name FROM t WHERE id = ?", [.integer(Int64(id))])
                #expect(rows.map { $0.string("name") } == ["n\(id)"])
            }
            // A failed run (a duplicate key) leaves the statement usable for the next.
            #expect(throws: SQLiteError.self) { try db.execute("INSERT INTO t(id, name) VALUES (?, ?)", [.integer(1), .text("again")]) }
            try db.execute("INSERT INTO t(id, name) VALUES (?, ?)", [.integer(101), .text("n101")])
            // A rolled-back transaction of cached statements leaves nothing, and the next commits.
            #expect(throws: Boom.self) {
                try db.transaction {
                    try db.execute("INSERT INTO t(id, name) VALUES (?, ?)", [.integer(102), .text("gone")])
                    throw Boom()
                }
            }
            try db.transaction { try db.execute("INSERT INTO t(id, name) VALUES (?, ?)", [.integer(103), .text("n103")]) }
            #expect(try count(db, "t") == 102)
            #expect(try db.query("SELECT name FROM t WHERE id = ?", [.integer(102)]).isEmpty)
            // A second connection sees every commit: no cached statement holds a read snapshot open.
            let other = try SQLiteConnection(path: path)
            #expect(try count(other, "t") == 102)
            try db.execute("INSERT INTO t(id, name) VALUES (?, ?)", [.integer(104), .text("n104")])
            #expect(try count(other, "t") == 103)
        }
    }
}
