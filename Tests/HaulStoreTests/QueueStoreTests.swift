import Foundation
import HaulCore
import HaulStore
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

// MARK: - Helpers

/// A file destination inside `directory`.
private func fileDownload(_ directory: TemporaryDirectory, _ name: String, priority: Int = 0, paused: Bool = false) -> NewDownload {
    NewDownload(
        url: "http://127.0.0.1:1/\(name)", destinationKind: .file, destination: directory.file("out/\(name)"),
        priority: priority, paused: paused)
}

/// Opens a second, raw connection on the store's file, for looking under the hood and for damage.
private func rawConnection(_ store: QueueStore) throws -> SQLiteConnection {
    try SQLiteConnection(path: store.location)
}

private func leaseColumns(_ store: QueueStore, _ id: Int64) throws -> (owner: String?, expires: Double?) {
    let row = try rawConnection(store).query("SELECT lease_owner, lease_expires FROM downloads WHERE id = ?", [.integer(id)]).first
    return (row?.string("lease_owner"), row?.double("lease_expires"))
}

/// A lease owner whose process has certainly exited: the pid of a `/bin/true` that was waited for.
private func deadOwner() throws -> LeaseOwner {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/true")
    try process.run()
    process.waitUntilExit()
    return LeaseOwner(pid: process.processIdentifier)
}

/// The store as another process sees it: a second `QueueStore` on the same directory, whose first
/// claim looks for abandoned items (a store may look only every few seconds after that).
private func otherProcessStore(_ store: QueueStore) throws -> QueueStore {
    try QueueStore(directory: (store.location as NSString).deletingLastPathComponent)
}

private func fileBytes(_ path: String) -> [UInt8]? {
    FileManager.default.contents(atPath: path).map { [UInt8]($0) }
}

/// What only the SQLite store does, grouped so `swift test --filter QueueStoreTests` selects them
/// all: its migrations of existing files, the recovery of a dead local process's items before their
/// leases expire, the truncation of its write-ahead log, crash safety of its file and its query
/// plans. Everything the queue promises on both databases is in `QueueStorageConformanceTests`.
@Suite("SQLite queue store")
struct QueueStoreTests {}

// MARK: - Opening and migrations

extension QueueStoreTests {
    @Suite("SQLite: opening and migrations")
    struct Opening {
        @Test("SQLite: GIVEN an empty directory WHEN the store opens THEN it creates haul.sqlite with every migration recorded once")
        func migratesEmptyDirectory() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let stateDirectory = directory.file("state/nested")

            let store = try QueueStore(directory: stateDirectory)

            #expect(store.location == stateDirectory + "/" + QueueStore.fileName)
            #expect(FileManager.default.fileExists(atPath: store.location))
            let db = try rawConnection(store)
            #expect(
                try db.query("SELECT name FROM schema_migrations ORDER BY rowid").compactMap { $0.string("name") } == [
                    "v1-downloads", "v2-attempts", "v3-options", "v4-fleet", "v5-destination-url", "v6-worker-tokens", "v7-serve-events",
                    "v8-move-intent",
                ])
            #expect(try db.query("PRAGMA user_version").first?[0] == .integer(8))
            let tables = Set(try db.query("SELECT name FROM sqlite_master WHERE type = 'table'").compactMap { $0.string("name") })
            #expect(tables.isSuperset(of: ["downloads", "schema_migrations"]))
            #expect(try store.all().isEmpty)
        }

        @Test("SQLite: GIVEN a store with an item WHEN it is reopened THEN migrating is a no-op and the item is kept")
        func reopeningIsNoOp() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let first = try QueueStore(directory: directory.path)
            let ids = try first.add([fileDownload(directory, "a")])
            let appliedBefore = try rawConnection(first).query("SELECT name, applied_at FROM schema_migrations")

            let second = try QueueStore(directory: directory.path)

            #expect(try second.all().map(\.id) == ids)
            #expect(try rawConnection(second).query("SELECT name, applied_at FROM schema_migrations") == appliedBefore)
            #expect(try rawConnection(second).query("PRAGMA user_version").first?[0] == .integer(8))
        }

        @Test(
            "SQLite: GIVEN an older database (schema_migrations only, no rows, no other table) WHEN the store opens THEN every migration is applied and it works"
        )
        func migratesOlderDatabase() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            do {
                let db = try SQLiteConnection(path: directory.file(QueueStore.fileName))
                try db.execute("CREATE TABLE schema_migrations(name TEXT PRIMARY KEY NOT NULL, applied_at REAL NOT NULL)")
            }

            let store = try QueueStore(directory: directory.path)

            #expect(
                try rawConnection(store).query("SELECT name FROM schema_migrations ORDER BY rowid").compactMap { $0.string("name") } == [
                    "v1-downloads", "v2-attempts", "v3-options", "v4-fleet", "v5-destination-url", "v6-worker-tokens", "v7-serve-events",
                    "v8-move-intent",
                ])
            let ids = try store.add([fileDownload(directory, "a")])
            #expect(try store.all().map(\.id) == ids)
        }

        @Test("SQLite: GIVEN a v1 database with an item WHEN the store opens THEN v2 adds attempts and the item is kept")
        func migratesV1DatabaseWithData() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            do {
                // A database as Haul's first schema left it, with one item in it.
                let db = try SQLiteConnection(path: directory.file(QueueStore.fileName))
                var v1 = Migrator()
                v1.registerMigration("v1-downloads") { db in
                    try db.execute(
                        """
                        CREATE TABLE downloads (id INTEGER PRIMARY KEY AUTOINCREMENT, url TEXT NOT NULL, method TEXT NOT NULL,
                            headers TEXT NOT NULL, body BLOB, destination_kind TEXT NOT NULL, destination TEXT NOT NULL, range_spec TEXT,
                            existing_policy TEXT NOT NULL, priority INTEGER NOT NULL DEFAULT 0, state TEXT NOT NULL,
                            bytes INTEGER NOT NULL DEFAULT 0, total_bytes INTEGER, speed REAL NOT NULL DEFAULT 0, final_path TEXT,
                            last_error TEXT, error_category TEXT, record TEXT, lease_owner TEXT, lease_expires REAL,
                            created_at REAL NOT NULL, updated_at REAL NOT NULL)
                        """)
                }
                try v1.migrate(db)
                try db.execute(
                    """
                    INSERT INTO downloads (url, method, headers, destination_kind, destination, existing_policy, state, created_at, updated_at)
                    VALUES ('http://h/old', 'GET', '[]', 'file', '/tmp/old', 'refuse', 'paused', 1, 1)
                    """)
            }

            let store = try QueueStore(directory: directory.path)

            let items = try store.all()
            #expect(items.map(\.url) == ["http://h/old"])
            #expect(items.first?.state == .paused)
            #expect(items.first?.attempts == 0)
        }

        @Test("SQLite: GIVEN a database from a newer Haul (an unknown migration recorded) WHEN the store opens THEN .corruptStore and the file is unchanged")
        func refusesNewerDatabase() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let path: String
            do {
                let store = try QueueStore(directory: directory.path)
                try store.add([fileDownload(directory, "a")])
                path = store.location
            }
            do {
                let db = try SQLiteConnection(path: path)
                try db.execute("INSERT INTO schema_migrations(name, applied_at) VALUES ('v9-from-the-future', 1e10)")
            }
            let before = try #require(fileBytes(path))

            var thrown: StoreError?
            do {
                _ = try QueueStore(directory: directory.path)
            } catch {
                thrown = error
            }

            #expect(thrown?.kind == .corruptStore)
            #expect(thrown?.message.contains("v9-from-the-future") == true)
            #expect(fileBytes(path) == before)
            let db = try SQLiteConnection(path: path)
            #expect(try db.query("SELECT count(*) AS n FROM schema_migrations").first?.int64("n") == 9)
            #expect(try db.query("SELECT count(*) AS n FROM downloads").first?.int64("n") == 1)
        }

        @Test(
            "SQLite: GIVEN a file that is not SQLite at <dir>/haul.sqlite WHEN the store opens THEN .corruptStore and its bytes are unchanged",
            arguments: [
                Array("not a database, just some text\n".utf8),
                Array(String(repeating: "haul queue? no, a text file of several pages.\n", count: 400).utf8),
                TestData.bytes(count: 8192, seed: 7),
            ])
        func refusesForeignFile(content: [UInt8]) throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let path = directory.file(QueueStore.fileName)
            #expect(FileManager.default.createFile(atPath: path, contents: Data(content)))

            let kind = storeErrorKind { _ = try QueueStore(directory: directory.path) }

            #expect(kind == .corruptStore)
            #expect(fileBytes(path) == content)
            #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        }
    }
}

// MARK: - Recovery by local process identity

extension QueueStoreTests {
    /// What only the SQLite store does: its owners are processes of this machine, so an owner
    /// whose PID is gone (or that ran under another boot) is known dead at once, and its items are
    /// recovered before their leases expire. The recovery of expired leases, which both stores
    /// share, is in `QueueStorageConformanceTests`.
    @Suite("SQLite: recovery by local process identity")
    struct LocalRecovery {
        /// The state the dead owner's item was in, and where recovery takes it.
        static let recoveries: [(DownloadState, DownloadState)] = [(.running, .running), (.pausing, .paused), (.cancelling, .cancelled)]

        @Test(
            "SQLite: a dead local PID's lease is recovered before it expires (running: claimed again, pausing: paused, cancelling: cancelled, lease released)",
            arguments: recoveries.indices)
        func recoversItemOfDeadOwner(_ index: Int) throws {
            let (state, recovered) = Self.recoveries[index]
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let id = try #require(try store.add([fileDownload(directory, "a")]).first)
            let dead = try deadOwner()
            #expect(!dead.isAlive)
            #expect(try store.claimNext(for: dead)?.id == id)
            if state == .pausing { try store.apply(.pauseRequested, to: id) }
            if state == .cancelling { try store.apply(.cancelRequested, to: id) }
            #expect((try leaseColumns(store, id).expires ?? 0) > Date().timeIntervalSince1970, "the lease has not expired")
            let alive = LeaseOwner()

            let reclaimed = try otherProcessStore(store).claimNext(for: alive)

            #expect(try store.item(id)?.state == recovered)
            if state == .running {
                #expect(reclaimed?.id == id)
                #expect(reclaimed?.state == .running)
                #expect(try leaseColumns(store, id).owner == alive.encoded)
            } else {
                #expect(reclaimed == nil)
                #expect(try leaseColumns(store, id).owner == nil)
            }
        }

        @Test("SQLite: a lease of another boot (same pid) is recovered before it expires: the owner is presumed dead and the item reclaimed")
        func recoversLeaseOfAnotherBoot() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let id = try #require(try store.add([fileDownload(directory, "a")]).first)
            let previousBoot = LeaseOwner(bootID: "boot-before-the-reboot")
            _ = try store.claimNext(for: previousBoot)

            let reclaimed = try otherProcessStore(store).claimNext(for: LeaseOwner())

            #expect(!previousBoot.isAlive)
            #expect(reclaimed?.id == id)
        }

        @Test(
            "SQLite: a state stored as a blob or an integer (SQLite's dynamic typing) of a dead process's item WHEN another owner claims THEN the other item is recovered and claimed, and the damaged one is failed with the reason, its lease released",
            arguments: [StoreValue.blob(Array("running".utf8)), .integer(3)])
        func recoveryFailsAnItemWhoseStateIsOfAnotherType(damagedState: StoreValue) throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let ids = try store.add([fileDownload(directory, "a"), fileDownload(directory, "b")])
            let dead = try deadOwner()
            _ = try store.claimNext(for: dead)
            _ = try store.claimNext(for: dead)
            try rawConnection(store).execute("UPDATE downloads SET state = ? WHERE id = ?", [damagedState, .integer(ids[1])])
            let alive = LeaseOwner()

            let reclaimed = try otherProcessStore(store).claimNext(for: alive)

            #expect(reclaimed?.id == ids[0])
            let row = try #require(try rawConnection(store).query("SELECT * FROM downloads WHERE id = ?", [.integer(ids[1])]).first)
            #expect(row.string("state") == "failed")
            #expect(row.string("last_error")?.contains("its stored state is damaged") == true, "\(row)")
            #expect(row.string("error_category") == "io")
            #expect(row.isNull("lease_owner"))
            #expect(try store.item(ids[1])?.state == .failed)
        }
    }
}

// MARK: - Forgetting secrets

extension QueueStoreTests {
    @Suite("SQLite: forgetting removed secrets (write-ahead log)")
    struct ForgettingSecrets {
        private static func walSize(_ store: QueueStore) -> Int {
            (try? FileManager.default.attributesOfItem(atPath: store.location + "-wal")[.size] as? Int) ?? 0
        }

        @Test(
            "SQLite: GIVEN a download with a header that completes WHEN forgetRemovedSecretsSoon runs THEN the write-ahead log is truncated and holds no copy of it"
        )
        func completionWithSecretsTruncatesTheLog() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            var new = fileDownload(directory, "a")
            new.headers = [HTTPHeaders.Field(name: "X-Api-Key", value: "KEY-3b7")]
            let id = try #require(try store.add([new]).first)
            let owner = LeaseOwner()
            _ = try store.claimNext(for: owner)
            _ = try store.claimNext(for: owner, settling: [.init(id: id, input: .transferCompleted, finished: (1, "/done/a"))])
            #expect(fileBytes(store.location + "-wal").map { Data($0).range(of: Data("KEY-3b7".utf8)) != nil } == true)

            store.forgetRemovedSecretsSoon()

            #expect(Self.walSize(store) == 0)
            #expect(fileBytes(store.location).map { Data($0).range(of: Data("KEY-3b7".utf8)) == nil } == true)
        }

        @Test(
            "SQLite: GIVEN a download with nothing secret that completes WHEN forgetRemovedSecretsSoon runs THEN the log is left as it is (the usual batch pays nothing)"
        )
        func completionWithoutSecretsLeavesTheLog() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let id = try #require(try store.add([fileDownload(directory, "a")]).first)
            let owner = LeaseOwner()
            _ = try store.claimNext(for: owner)
            _ = try store.claimNext(for: owner, settling: [.init(id: id, input: .transferCompleted, finished: (1, "/done/a"))])
            let before = Self.walSize(store)

            store.forgetRemovedSecretsSoon()

            #expect(before > 0)
            #expect(Self.walSize(store) == before)
        }
    }
}

// MARK: - Crash safety

/// The `haul` executable that `swift build --build-tests` put beside the test bundle (or `HAUL_BINARY`).
private func haulBinary() throws -> String {
    try BuiltBinary.path("haul")
}

/// The pids of the direct children of `pid`, from /proc.
private func childrenOf(_ pid: Int32) -> [Int32] {
    let text = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
    return text.split(separator: " ").compactMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
}

extension QueueStoreTests {
    @Suite("SQLite: crash safety")
    struct Crash {
        @Test("SQLite: GIVEN a shell loop of `haul queue add` WHEN it and its child are killed with SIGKILL (3 times) THEN the store is intact and consistent")
        func survivesSIGKILLOfWriter() throws {
            let haul = try haulBinary()
            let directory = try TemporaryDirectory(prefix: "haul-queue-crash")
            let state = directory.file("state")
            let outputs = directory.file("out")
            try FileManager.default.createDirectory(atPath: outputs, withIntermediateDirectories: true)
            let printed = directory.file("printed-ids")
            let errors = directory.file("errors")
            let script = """
                for i in $(seq "$4" 100000); do
                    "$1" queue add --state "$2" "http://127.0.0.1:1/$i" -o "$3/$i" >>"$5" 2>>"$6"
                done
                """
            var rowsSoFar = 0
            var kills = 0

            // Each round waits until the loop's first add of the round has printed its id, then lets it run
            // a little longer, so the kill lands mid-add on a busy machine too (fixed pauses of 0.9 and 1.2 s
            // once both ended before any add committed, in CI).
            func printedCount() -> Int {
                ((try? String(contentsOfFile: printed, encoding: .utf8)) ?? "").split(separator: "\n").count
            }
            for pause in [0.2, 0.35, 0.5] {
                let shell = Process()
                shell.executableURL = URL(fileURLWithPath: "/bin/bash")
                shell.arguments = ["-c", script, "haul-loop", haul, state, outputs, String(rowsSoFar + 1), printed, errors]
                shell.standardInput = FileHandle.nullDevice
                let printedBefore = printedCount()
                try shell.run()
                let deadline = Date().addingTimeInterval(60)
                while printedCount() <= printedBefore, Date() < deadline { usleep(20_000) }
                usleep(useconds_t(pause * 1_000_000))
                // Freeze the loop so it cannot start another child, kill the child it is waiting for, then the loop.
                kill(shell.processIdentifier, SIGSTOP)
                let children = childrenOf(shell.processIdentifier)
                for child in children { kill(child, SIGKILL) }
                kill(shell.processIdentifier, SIGKILL)
                shell.waitUntilExit()
                #expect(shell.terminationReason == .uncaughtSignal)

                let store = try QueueStore(directory: state)
                let items = try store.all()
                let ids = items.map(\.id)
                #expect(ids == (0..<items.count).map { Int64($0 + 1) }, "ids are 1...n without gaps or repeats")
                #expect(zip(ids, ids.dropFirst()).allSatisfy { $0 < $1 })
                // Every row is the add that made it, whole: URL, destination and state agree with its id.
                for item in items {
                    #expect(item.url == "http://127.0.0.1:1/\(item.id)")
                    #expect(item.destination == outputs + "/\(item.id)")
                    #expect(item.state == .queued)
                }
                #expect(
                    items.count > rowsSoFar, "the loop added nothing in a minute; stderr: \((try? String(contentsOfFile: errors, encoding: .utf8)) ?? "")")
                // Every id a child printed is stored; at most each killed child's commit went unprinted
                // (one per round so far: the printed file and the store accumulate over the rounds).
                kills += 1
                let printedIDs = ((try? String(contentsOfFile: printed, encoding: .utf8)) ?? "").split(separator: "\n").compactMap { Int64($0) }
                #expect(Set(printedIDs).isSubset(of: Set(ids)))
                #expect(items.count - printedIDs.count <= kills)
                rowsSoFar = items.count
            }

            let db = try SQLiteConnection(path: state + "/" + QueueStore.fileName)
            try db.checkIntegrity()
            #expect(try db.query("PRAGMA integrity_check").map { $0[0] } == [.text("ok")])
            #expect(try db.query("SELECT count(*) AS n FROM downloads").first?.int("n") == rowsSoFar)
            // The store is still writable: no lock or hot journal was left behind.
            let store = try QueueStore(directory: state)
            let next = try store.add([NewDownload(url: "http://127.0.0.1:1/after", destinationKind: .file, destination: outputs + "/after")])
            #expect(next == [Int64(rowsSoFar + 1)])
            #expect(((try? String(contentsOfFile: errors, encoding: .utf8)) ?? "").isEmpty)
        }
    }
}

extension QueueStoreTests {
    @Suite("SQLite: adding many into one directory")
    struct AddingManyIntoOneDirectory {
        @Test(
            "SQLite: GIVEN items queued into one directory WHEN one more is added THEN its check for an unfinished twin looks it up by directory and URL, not through every item"
        )
        func theTwinCheckUsesTheDestinationAndURLIndex() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let out = directory.file("out")
            _ = try store.add((0..<50).map { NewDownload(url: "http://127.0.0.1:1/f\($0)", destinationKind: .directory, destination: out) })
            // The query `add` runs for each new item (QueueStore+Adding.swift, activeItem).
            let plan = try rawConnection(store).query(
                """
                EXPLAIN QUERY PLAN SELECT id FROM downloads WHERE destination_kind = 'directory' AND destination = ? AND url = ?
                    AND state NOT IN ('completed', 'cancelled') LIMIT 1
                """, [.text(out), .text("http://127.0.0.1:1/f7")]
            ).compactMap { $0.string("detail") }.joined(separator: "; ")
            // Before the index, every item of the directory was read (10,000 files: a tenth of a second per addition at the end).
            #expect(plan.contains("downloads_destination_url"), "\(plan)")
            #expect(try store.add([NewDownload(url: "http://127.0.0.1:1/new", destinationKind: .directory, destination: out)]).count == 1)
        }
    }
}
