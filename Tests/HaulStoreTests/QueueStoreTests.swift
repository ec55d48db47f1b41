import Foundation
import HaulCore
import HaulStore
import HaulTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

// MARK: - Helpers

/// The kind of `StoreError` that `body` throws, or nil when it returns normally (an error of
/// another type is recorded as an issue).
private func storeErrorKind(
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) -> StoreError.Kind? {
    do {
        try body()
        return nil
    } catch let error as StoreError {
        return error.kind
    } catch {
        Issue.record("expected a StoreError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

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

/// Every QueueStore test, grouped so `swift test --filter QueueStoreTests` selects them all.
@Suite("Queue store")
struct QueueStoreTests {}

// MARK: - Opening and migrations

extension QueueStoreTests {
    @Suite("Opening and migrations")
    struct Opening {
        @Test("GIVEN an empty directory WHEN the store opens THEN it creates haul.sqlite with every migration recorded once")
        func migratesEmptyDirectory() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let stateDirectory = directory.file("state/nested")

            let store = try QueueStore(directory: stateDirectory)

            #expect(store.location == stateDirectory + "/" + QueueStore.fileName)
            #expect(FileManager.default.fileExists(atPath: store.location))
            let db = try rawConnection(store)
            #expect(
                try db.query("SELECT name FROM schema_migrations ORDER BY rowid").compactMap { $0.string("name") } == [
                    "v1-downloads", "v2-attempts", "v3-options", "v4-fleet", "v5-destination-url", "v6-worker-tokens",
                ])
            #expect(try db.query("PRAGMA user_version").first?[0] == .integer(6))
            let tables = Set(try db.query("SELECT name FROM sqlite_master WHERE type = 'table'").compactMap { $0.string("name") })
            #expect(tables.isSuperset(of: ["downloads", "schema_migrations"]))
            #expect(try store.all().isEmpty)
        }

        @Test("GIVEN a store with an item WHEN it is reopened THEN migrating is a no-op and the item is kept")
        func reopeningIsNoOp() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let first = try QueueStore(directory: directory.path)
            let ids = try first.add([fileDownload(directory, "a")])
            let appliedBefore = try rawConnection(first).query("SELECT name, applied_at FROM schema_migrations")

            let second = try QueueStore(directory: directory.path)

            #expect(try second.all().map(\.id) == ids)
            #expect(try rawConnection(second).query("SELECT name, applied_at FROM schema_migrations") == appliedBefore)
            #expect(try rawConnection(second).query("PRAGMA user_version").first?[0] == .integer(6))
        }

        @Test("GIVEN an older database (schema_migrations only, no rows, no other table) WHEN the store opens THEN every migration is applied and it works")
        func migratesOlderDatabase() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            do {
                let db = try SQLiteConnection(path: directory.file(QueueStore.fileName))
                try db.execute("CREATE TABLE schema_migrations(name TEXT PRIMARY KEY NOT NULL, applied_at REAL NOT NULL)")
            }

            let store = try QueueStore(directory: directory.path)

            #expect(
                try rawConnection(store).query("SELECT name FROM schema_migrations ORDER BY rowid").compactMap { $0.string("name") } == [
                    "v1-downloads", "v2-attempts", "v3-options", "v4-fleet", "v5-destination-url", "v6-worker-tokens",
                ])
            let ids = try store.add([fileDownload(directory, "a")])
            #expect(try store.all().map(\.id) == ids)
        }

        @Test("GIVEN a v1 database with an item WHEN the store opens THEN v2 adds attempts and the item is kept")
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

        @Test("GIVEN a database from a newer Haul (an unknown migration recorded) WHEN the store opens THEN .corruptStore and the file is unchanged")
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
            #expect(try db.query("SELECT count(*) AS n FROM schema_migrations").first?.int64("n") == 7)
            #expect(try db.query("SELECT count(*) AS n FROM downloads").first?.int64("n") == 1)
        }

        @Test(
            "GIVEN a file that is not SQLite at <dir>/haul.sqlite WHEN the store opens THEN .corruptStore and its bytes are unchanged",
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

// MARK: - Adding and reading

extension QueueStoreTests {
    @Suite("Adding and reading")
    struct Adding {
        @Test("GIVEN a download with every field set WHEN it is added THEN item() and all() return every field")
        func roundTripsEveryField() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let body: [UInt8] = [0, 1, 2, 0xFF, 0x00, 0x7F, 0x80]
            let headers = [
                HTTPHeaders.Field(name: "Authorization", value: "Bearer x|y\"z"),
                HTTPHeaders.Field(name: "X-Dup", value: "1"),
                HTTPHeaders.Field(name: "X-Dup", value: "ünïcødé, 2"),
            ]
            let new = NewDownload(
                url: "https://example.com/a%20b?q=1#frag", method: "POST", headers: headers, body: body,
                destinationKind: .directory, destination: directory.file("downloads"), range: "bytes=100-199",
                existingPolicy: .continueIt, priority: -7, paused: true)
            let before = Date()

            let ids = try store.add([new])

            #expect(ids.count == 1)
            let id = try #require(ids.first)
            let item = try #require(try store.item(id))
            #expect(item.id == id)
            #expect(item.url == new.url)
            #expect(item.method == "POST")
            #expect(item.headers == headers)
            #expect(item.body == body)
            #expect(item.destinationKind == .directory)
            #expect(item.destination == new.destination)
            #expect(item.range == "bytes=100-199")
            #expect(item.existingPolicy == .continueIt)
            #expect(item.priority == -7)
            #expect(item.state == .paused)
            #expect(item.bytes == 0)
            #expect(item.totalBytes == nil)
            #expect(item.finalPath == nil)
            #expect(item.lastError == nil)
            #expect(item.errorCategory == nil)
            #expect(item.createdAt.timeIntervalSince1970 >= before.timeIntervalSince1970 - 1)
            #expect(try store.all() == [item])
        }

        @Test("GIVEN defaults and an empty body WHEN added THEN the state is queued, no range, and [] stays distinct from nil")
        func roundTripsDefaults() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)

            let ids = try store.add([
                NewDownload(url: "http://h/a", destinationKind: .file, destination: directory.file("a")),
                NewDownload(url: "http://h/b", body: [], destinationKind: .file, destination: directory.file("b")),
            ])

            let items = try store.all()
            #expect(items.map(\.id) == ids)
            #expect(items.map(\.state) == [.queued, .queued])
            #expect(items[0].method == "GET")
            #expect(items[0].headers.isEmpty)
            #expect(items[0].body == nil)
            #expect(items[0].range == nil)
            #expect(items[0].existingPolicy == .refuse)
            #expect(items[1].body == [])
        }

        @Test("GIVEN updateProgress WHEN the item is read THEN bytes, total, speed and final path are stored, and a nil path keeps the old one")
        func storesProgress() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let id = try #require(try store.add([fileDownload(directory, "a")]).first)
            let owner = LeaseOwner()
            let lease = try #require(try store.claimNext(for: owner)).lease(for: owner)

            try store.updateProgress(lease, bytes: 1234, totalBytes: 5000, bytesPerSecond: 2.5, finalPath: "/x/a")
            try store.updateProgress(lease, bytes: 2000, totalBytes: nil, bytesPerSecond: 3, finalPath: nil)

            let item = try #require(try store.item(id))
            #expect(item.bytes == 2000)
            #expect(item.totalBytes == nil)
            #expect(item.bytesPerSecond == 3)
            #expect(item.finalPath == "/x/a")
        }

        @Test("GIVEN a batch whose last item conflicts with a queued one WHEN added THEN nothing is added (all or none)")
        func batchIsAllOrNone() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let existing = try store.add([fileDownload(directory, "taken")])

            let kind = storeErrorKind {
                try store.add([fileDownload(directory, "one"), fileDownload(directory, "two"), fileDownload(directory, "taken")])
            }

            #expect(kind == .conflict)
            #expect(try store.all().map(\.id) == existing)
            // The refused batch consumed no ids either: the next one follows the existing item.
            let next = try store.add([fileDownload(directory, "one")])
            #expect(next == [existing[0] + 1])
        }

        @Test("GIVEN a batch naming the same file twice WHEN added THEN .conflict and nothing is added")
        func batchRefusesInternalDuplicate() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)

            let kind = storeErrorKind {
                try store.add([fileDownload(directory, "same"), fileDownload(directory, "other"), fileDownload(directory, "same")])
            }

            #expect(kind == .conflict)
            #expect(try store.all().isEmpty)
        }

        @Test("GIVEN a URL queued into a directory WHEN another URL or the same URL is added there THEN only the same URL conflicts")
        func directoryConflictsOnlyForSameURL() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let into = directory.file("downloads")
            func intoDirectory(_ url: String) -> NewDownload {
                NewDownload(url: url, destinationKind: .directory, destination: into)
            }
            try store.add([intoDirectory("http://h/a")])

            let otherURL = storeErrorKind { try store.add([intoDirectory("http://h/b")]) }
            let sameURL = storeErrorKind { try store.add([intoDirectory("http://h/a")]) }
            let sameURLOtherDirectory = storeErrorKind {
                try store.add([NewDownload(url: "http://h/a", destinationKind: .directory, destination: directory.file("elsewhere"))])
            }
            let sameInOneBatch = storeErrorKind { try store.add([intoDirectory("http://h/c"), intoDirectory("http://h/c")]) }

            #expect(otherURL == nil)
            #expect(sameURL == .conflict)
            #expect(sameURLOtherDirectory == nil)
            #expect(sameInOneBatch == .conflict)
            #expect(try store.all().map(\.url) == ["http://h/a", "http://h/b", "http://h/a"])
            #expect(try store.activeItem(for: intoDirectory("http://h/a"))?.destination == into)
            #expect(try store.activeItem(for: intoDirectory("http://h/zzz")) == nil)
        }

        @Test("GIVEN a destination used by a cancelled or completed item WHEN it is added again THEN it is accepted; a paused or failed one still conflicts")
        func settledItemsFreeTheirDestination() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let owner = LeaseOwner()
            let ids = try store.add([
                fileDownload(directory, "cancelled"), fileDownload(directory, "completed"),
                fileDownload(directory, "paused", paused: true), fileDownload(directory, "failed"),
            ])
            try store.apply(.cancelRequested, to: ids[0])
            let claimedCompleted = try store.claimNext(for: owner, among: [ids[1]])
            try store.apply(.transferCompleted, to: ids[1])
            let claimedFailed = try store.claimNext(for: owner, among: [ids[3]])
            try store.apply(.transferFailed, to: ids[3])
            #expect(claimedCompleted?.id == ids[1])
            #expect(claimedFailed?.id == ids[3])

            #expect(storeErrorKind { try store.add([fileDownload(directory, "cancelled")]) } == nil)
            #expect(storeErrorKind { try store.add([fileDownload(directory, "completed")]) } == nil)
            #expect(storeErrorKind { try store.add([fileDownload(directory, "paused")]) } == .conflict)
            #expect(storeErrorKind { try store.add([fileDownload(directory, "failed")]) } == .conflict)
        }
    }
}

// MARK: - Lifecycle

extension QueueStoreTests {
    @Suite("Lifecycle")
    struct Lifecycle {
        @Test("GIVEN a claimed item WHEN pause, checkpoint, resume are applied THEN each state and action follows the lifecycle")
        func followsLifecycle() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let id = try #require(try store.add([fileDownload(directory, "a")]).first)
            let claimed = try #require(try store.claimNext(for: LeaseOwner()))
            #expect(claimed.id == id)
            #expect(claimed.state == .running)

            let (pausing, stop) = try store.apply(.pauseRequested, to: id)
            #expect(pausing.state == .pausing)
            #expect(stop == .stopTransfer)
            #expect(try store.item(id)?.state == .pausing)
            #expect(try leaseColumns(store, id).owner != nil)  // still held until the transfer stops

            let (paused, none) = try store.apply(.transferPaused, to: id)
            #expect(paused.state == .paused)
            #expect(none == .none)
            #expect(try leaseColumns(store, id).owner == nil)

            let (queued, _) = try store.apply(.resumeRequested, to: id)
            #expect(queued.state == .queued)
            #expect(try store.item(id)?.state == .queued)
        }

        @Test("GIVEN a running item WHEN it fails with an error and is resumed THEN the error is stored, then cleared")
        func storesAndClearsError() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let id = try #require(try store.add([fileDownload(directory, "a")]).first)
            _ = try store.claimNext(for: LeaseOwner())

            let (failed, _) = try store.apply(.transferFailed, to: id, error: (category: "http", message: "404 Not Found"))

            #expect(failed.state == .failed)
            #expect(try store.item(id)?.lastError == "404 Not Found")
            #expect(try store.item(id)?.errorCategory == "http")
            #expect(try leaseColumns(store, id).owner == nil)

            try store.apply(.resumeRequested, to: id)
            #expect(try store.item(id)?.state == .queued)
            #expect(try store.item(id)?.lastError == nil)
            #expect(try store.item(id)?.errorCategory == nil)
        }

        @Test(
            "GIVEN an item in some state WHEN an illegal input is applied THEN .conflict and the stored state is unchanged",
            arguments: [
                (DownloadState.queued, LifecycleInput.transferCompleted),
                (.queued, .transferPaused),
                (.paused, .start),
                (.paused, .transferCompleted),
                (.completed, .start),
                (.completed, .resumeRequested),
                (.cancelled, .resumeRequested),
                (.failed, .pauseRequested),
            ])
        func refusesIllegalTransition(state: DownloadState, input: LifecycleInput) throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let id = try #require(try store.add([fileDownload(directory, "a")]).first)
            // Drive the item to `state` through legal steps.
            switch state {
            case .queued: break
            case .paused: try store.apply(.pauseRequested, to: id)
            case .cancelled: try store.apply(.cancelRequested, to: id)
            case .completed:
                _ = try store.claimNext(for: LeaseOwner())
                try store.apply(.transferCompleted, to: id)
            case .failed:
                _ = try store.claimNext(for: LeaseOwner())
                try store.apply(.transferFailed, to: id, error: (category: "io", message: "disk"))
            default: Issue.record("no path to \(state) in this test")
            }
            let before = try #require(try store.item(id))
            #expect(before.state == state)

            let kind = storeErrorKind { try store.apply(input, to: id) }

            #expect(kind == .conflict)
            #expect(try store.item(id) == before)
        }

        @Test("GIVEN no such item WHEN apply or remove is called THEN .notFound")
        func unknownItemIsNotFound() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)

            #expect(storeErrorKind { try store.apply(.start, to: 42) } == .notFound)
            #expect(storeErrorKind { try store.remove(42) } == .notFound)
        }

        @Test("GIVEN a running item WHEN remove is called THEN .conflict; once cancelled it is removed")
        func removeRefusesRunningItem() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let id = try #require(try store.add([fileDownload(directory, "a")]).first)
            _ = try store.claimNext(for: LeaseOwner())

            #expect(storeErrorKind { try store.remove(id) } == .conflict)
            #expect(try store.item(id)?.state == .running)

            try store.apply(.cancelRequested, to: id)
            try store.apply(.transferCancelled, to: id)
            try store.remove(id)
            #expect(try store.item(id) == nil)
        }
    }
}

// MARK: - Claiming and leases

extension QueueStoreTests {
    @Suite("Claiming and leases")
    struct Leases {
        @Test("GIVEN items of several priorities WHEN claimed one by one THEN the highest priority goes first, then the lowest id")
        func claimsByPriorityThenID() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let ids = try store.add([
                fileDownload(directory, "a", priority: 0), fileDownload(directory, "b", priority: 5),
                fileDownload(directory, "c", priority: 5), fileDownload(directory, "d", priority: -1),
                fileDownload(directory, "e", priority: 0), fileDownload(directory, "f", priority: 9, paused: true),
            ])
            let owner = LeaseOwner()

            var order: [Int64] = []
            while let item = try store.claimNext(for: owner) {
                #expect(item.state == .running)
                order.append(item.id)
            }

            #expect(order == [ids[1], ids[2], ids[0], ids[4], ids[3]])
            #expect(try store.item(ids[5])?.state == .paused)
            let lease = try leaseColumns(store, ids[1])
            #expect(lease.owner == owner.encoded)
            #expect((lease.expires ?? 0) > Date().timeIntervalSince1970 + LeaseDuration.fromEnvironment - 5)
        }

        @Test("GIVEN a claim limited with among: WHEN better items exist outside the set THEN only items in the set are claimed")
        func claimsOnlyAmongGivenIDs() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let ids = try store.add([
                fileDownload(directory, "a", priority: 9), fileDownload(directory, "b", priority: 1),
                fileDownload(directory, "c", priority: 2),
            ])
            let owner = LeaseOwner()

            let first = try store.claimNext(for: owner, among: [ids[1], ids[2]])
            let second = try store.claimNext(for: owner, among: [ids[1], ids[2]])
            let third = try store.claimNext(for: owner, among: [ids[1], ids[2]])
            let none = try store.claimNext(for: owner, among: [])

            #expect(first?.id == ids[2])
            #expect(second?.id == ids[1])
            #expect(third == nil)
            #expect(none == nil)
            #expect(try store.item(ids[0])?.state == .queued)
            #expect(try store.hasPendingWork(among: [ids[0]]))
            #expect(try !store.hasPendingWork(among: [999]))
        }

        @Test("GIVEN 100 items and two stores on one directory WHEN two threads claim until empty THEN each id is claimed exactly once")
        func twoOwnersNeverClaimTheSameItem() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let setup = try QueueStore(directory: directory.path)
            let ids = try setup.add((1...100).map { fileDownload(directory, "item-\($0)") })
            let stores = [try QueueStore(directory: directory.path), try QueueStore(directory: directory.path)]
            let owners = [LeaseOwner(), LeaseOwner()]
            let claims = Mutex<[[Int64]]>([[], []])
            let failures = Mutex<[String]>([])
            let done = DispatchGroup()
            let ready = Atomic<Int>(0)

            for index in 0..<2 {
                done.enter()
                let thread = Thread { [stores, owners] in
                    defer { done.leave() }
                    // Start together, so the claims really race.
                    ready.add(1, ordering: .acquiringAndReleasing)
                    while ready.load(ordering: .acquiring) < 2 {}
                    do {
                        while let item = try stores[index].claimNext(for: owners[index]) {
                            claims.withLock { $0[index].append(item.id) }
                        }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
                thread.start()
            }
            #expect(done.wait(timeout: .now() + 60) == .success)

            let byOwner = claims.withLock { $0 }
            #expect(failures.withLock { $0 }.isEmpty)
            #expect(Set(byOwner[0]).isDisjoint(with: byOwner[1]))
            #expect((byOwner[0] + byOwner[1]).sorted() == ids)
            #expect(try setup.all().allSatisfy { $0.state == .running })
            let leases = try rawConnection(setup).query("SELECT lease_owner, count(*) AS n FROM downloads GROUP BY lease_owner")
            let counts = Dictionary(uniqueKeysWithValues: leases.compactMap { row in row.string("lease_owner").map { ($0, row.int("n") ?? -1) } })
            #expect(counts[owners[0].encoded, default: 0] == byOwner[0].count)
            #expect(counts[owners[1].encoded, default: 0] == byOwner[1].count)
        }

        @Test("GIVEN an item running under a dead process WHEN another owner calls claimNext THEN it is recovered to queued and claimed again")
        func recoversRunningItemOfDeadOwner() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let id = try #require(try store.add([fileDownload(directory, "a")]).first)
            let dead = try deadOwner()
            #expect(!dead.isAlive)
            #expect(try store.claimNext(for: dead)?.id == id)
            let alive = LeaseOwner()

            let reclaimed = try otherProcessStore(store).claimNext(for: alive)

            #expect(reclaimed?.id == id)
            #expect(reclaimed?.state == .running)
            #expect(try leaseColumns(store, id).owner == alive.encoded)
        }

        @Test("GIVEN a pausing item of a dead process WHEN claimNext runs THEN it becomes paused and its lease is released")
        func recoversPausingItemOfDeadOwner() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let id = try #require(try store.add([fileDownload(directory, "a")]).first)
            _ = try store.claimNext(for: try deadOwner())
            try store.apply(.pauseRequested, to: id)

            let claimed = try otherProcessStore(store).claimNext(for: LeaseOwner())

            #expect(claimed == nil)
            #expect(try store.item(id)?.state == .paused)
            #expect(try leaseColumns(store, id).owner == nil)
        }

        @Test("GIVEN a cancelling item of a dead process WHEN claimNext runs THEN it becomes cancelled")
        func recoversCancellingItemOfDeadOwner() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let id = try #require(try store.add([fileDownload(directory, "a")]).first)
            _ = try store.claimNext(for: try deadOwner())
            try store.apply(.cancelRequested, to: id)

            let claimed = try otherProcessStore(store).claimNext(for: LeaseOwner())

            #expect(claimed == nil)
            #expect(try store.item(id)?.state == .cancelled)
            #expect(try leaseColumns(store, id).owner == nil)
        }

        @Test(
            "GIVEN a cancelling item of a dead process, with a header and a password in its URL WHEN claimNext recovers it THEN it is cancelled and keeps neither"
        )
        func recoveredCancellationKeepsNoSecret() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            var new = fileDownload(directory, "a")
            new.url = "http://alice:hunter2@127.0.0.1:1/a"
            new.headers = [HTTPHeaders.Field(name: "X-Api-Key", value: "KEY-1")]
            let id = try #require(try store.add([new]).first)
            _ = try store.claimNext(for: try deadOwner())
            try store.apply(.cancelRequested, to: id)

            _ = try otherProcessStore(store).claimNext(for: LeaseOwner())

            let item = try #require(try store.item(id))
            #expect(item.state == .cancelled)
            #expect(item.headers.isEmpty)
            #expect(item.url == "http://alice@127.0.0.1:1/a")
        }

        @Test("GIVEN a lease of another boot (same pid) WHEN claimNext runs THEN the owner is presumed dead and the item reclaimed")
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

        @Test("GIVEN a live owner whose lease expired WHEN another owner calls claimNext THEN the item is recovered and claimed by it")
        func recoversExpiredLeaseOfLiveOwner() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let ids = try store.add([fileDownload(directory, "a"), fileDownload(directory, "b")])
            let stale = LeaseOwner()
            #expect(try store.claimNext(for: stale)?.id == ids[0])
            #expect(try store.claimNext(for: stale)?.id == ids[1])
            try rawConnection(store).execute(
                "UPDATE downloads SET lease_expires = ? WHERE id = ?",
                [.real(Date().timeIntervalSince1970 - 1), .integer(ids[0])])
            let other = LeaseOwner()
            let otherStore = try otherProcessStore(store)

            let reclaimed = try otherStore.claimNext(for: other)

            #expect(stale.isAlive)
            #expect(reclaimed?.id == ids[0])
            #expect(try leaseColumns(store, ids[0]).owner == other.encoded)
            // The unexpired lease of the same live owner is left alone.
            #expect(try leaseColumns(store, ids[1]).owner == stale.encoded)
            #expect(try otherProcessStore(store).claimNext(for: other) == nil)
        }

        @Test("GIVEN leases of two owners, one asked to pause WHEN renewLeases runs THEN it reports its own states and extends its leases")
        func renewLeasesReportsStates() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let ids = try store.add([fileDownload(directory, "a"), fileDownload(directory, "b"), fileDownload(directory, "c")])
            let owner = LeaseOwner()
            let other = LeaseOwner()
            let first = try #require(try store.claimNext(for: owner))
            let second = try #require(try store.claimNext(for: owner))
            _ = try store.claimNext(for: other)
            let held = [first.lease(for: owner), second.lease(for: owner)]
            try store.apply(.pauseRequested, to: ids[0])
            // Let the owner's leases lapse; renewal must bring them back before anyone recovers them.
            try rawConnection(store).execute(
                "UPDATE downloads SET lease_expires = ? WHERE lease_owner = ?",
                [.real(Date().timeIntervalSince1970 - 1), .text(owner.encoded)])

            let states = try store.renewLeases(held)

            #expect(states == [ids[0]: .pausing, ids[1]: .running])
            #expect((try leaseColumns(store, ids[0]).expires ?? 0) > Date().timeIntervalSince1970 + LeaseDuration.fromEnvironment - 5)
            #expect(try otherProcessStore(store).claimNext(for: LeaseOwner()) == nil)
            #expect(try store.item(ids[0])?.state == .pausing)
            #expect(try store.item(ids[1])?.state == .running)
            #expect(try leaseColumns(store, ids[1]).owner == owner.encoded)
            let stranger = LeaseOwner()
            #expect(try store.renewLeases(held.map { Lease(item: $0.item, owner: stranger, epoch: $0.epoch) }).isEmpty)
        }
    }
}

// MARK: - Lease fencing

extension QueueStoreTests {
    @Suite("Lease fencing")
    struct LeaseFencing {
        @Test("GIVEN a queued item WHEN something tries apply(.start) THEN it is refused: only a claim, which takes a lease, starts an item")
        func startOnlyByClaiming() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let id = try #require(try store.add([fileDownload(directory, "a")]).first)

            #expect(storeErrorKind { _ = try store.apply(.start, to: id) } == .conflict)

            #expect(try store.item(id)?.state == .queued)
            let claimed = try store.claimNext(for: LeaseOwner())
            #expect(claimed?.id == id)
            #expect(claimed?.attempts == 1)
            // AND another process cannot take the running, leased item
            #expect(try otherProcessStore(store).claimNext(for: LeaseOwner()) == nil)
        }

        @Test("GIVEN an owner whose expired lease was taken over WHEN it reports completion THEN the store refuses it")
        func staleOwnerCannotSettleTakenItem() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let id = try #require(try store.add([fileDownload(directory, "a")]).first)
            let stale = LeaseOwner()
            let claimed = try #require(try store.claimNext(for: stale))
            try rawConnection(store).execute("UPDATE downloads SET lease_expires = 0 WHERE id = ?", [.integer(id)])
            let successor = LeaseOwner()
            #expect(try otherProcessStore(store).claimNext(for: successor)?.id == id)
            #expect(try store.renewLeases([claimed.lease(for: stale)]).isEmpty)

            let staleCompletion = storeErrorKind { _ = try store.apply(.transferCompleted, to: id, owner: stale) }
            // A settlement riding on the stale owner's next claim is skipped, not applied.
            _ = try store.claimNext(for: stale, among: [], settling: [.init(id: id, input: .transferCompleted, finished: (1, "/x"))])

            #expect(staleCompletion == .conflict)
            #expect(try store.item(id)?.state == .running)
            #expect(try store.item(id)?.attempts == 2)
            // AND the real owner settles it
            try store.apply(.transferCompleted, to: id, owner: successor)
            #expect(try store.item(id)?.state == .completed)
        }

        @Test("GIVEN a finished transfer WHEN its settlement rides on the next claim THEN both land in one transaction")
        func settlementWithClaim() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let ids = try store.add([fileDownload(directory, "a"), fileDownload(directory, "b")])
            let owner = LeaseOwner()
            let first = try #require(try store.claimNext(for: owner))

            let second = try store.claimNext(for: owner, settling: [.init(id: first.id, input: .transferCompleted, finished: (42, "/done/a"))])

            #expect(second?.id == ids[1])
            let settled = try #require(try store.item(first.id))
            #expect(settled.state == .completed)
            #expect(settled.bytes == 42)
            #expect(settled.finalPath == "/done/a")
        }
    }
}

// MARK: - Resume records

extension QueueStoreTests {
    @Suite("Record slots")
    struct Records {
        private static func sampleRecord() -> ResumeRecord {
            ResumeRecord(
                originalURL: "http://h/a", finalURL: "http://cdn/a", method: "GET", range: "bytes=0-99",
                validators: Validators(etag: EntityTag(isWeak: false, opaqueTag: "abc"), lastModified: "Wed, 21 Oct 2015 07:28:00 GMT"),
                totalLength: 1000, finalLength: 100, contentEncoding: nil, resourceStart: 0, syncedLength: 64,
                bootID: "boot-1", fileName: "a.bin", isAdopted: true, updatedAt: Date(timeIntervalSince1970: 1_700_000_000))
        }

        @Test("GIVEN an item's record slot WHEN a record is saved, loaded and removed THEN it round-trips and then is gone")
        func roundTrips() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let ids = try store.add([fileDownload(directory, "a"), fileDownload(directory, "b")])
            let slot = store.resumeRecord(ids[0])
            #expect(try slot.load() == nil)

            try slot.save(Self.sampleRecord())

            #expect(try slot.load() == Self.sampleRecord())
            #expect(try QueueStore(directory: directory.path).resumeRecord(ids[0]).load() == Self.sampleRecord())
            #expect(try store.resumeRecord(ids[1]).load() == nil)
            slot.remove()
            #expect(try slot.load() == nil)
        }

        @Test("GIVEN a claimed item's finished record WHEN its slot removes it THEN it stays until the completed settlement forgets it")
        func finishedRecordIsForgottenByTheCompletingCommit() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let id = try #require(try store.add([fileDownload(directory, "a")]).first)
            let owner = LeaseOwner()
            let claimed = try #require(try store.claimNext(for: owner))
            let slot = store.resumeRecord(for: claimed, owner: owner)
            var finished = Self.sampleRecord()
            finished.finishedLength = 100
            try slot.save(finished)

            slot.remove()

            // A process dying here leaves a running item whose record still names its finished file.
            #expect(try store.resumeRecord(id).load() == finished)
            _ = try store.claimNext(for: owner, settling: [.init(id: id, input: .transferCompleted, finished: (100, "/done/a"))])
            #expect(try store.resumeRecord(id).load() == nil)
            #expect(try store.item(id)?.state == .completed)
        }

        @Test("GIVEN a claimed item's unfinished record WHEN its slot removes it THEN it is gone at once")
        func unfinishedRecordIsRemovedAtOnce() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let id = try #require(try store.add([fileDownload(directory, "a")]).first)
            let owner = LeaseOwner()
            let claimed = try #require(try store.claimNext(for: owner))
            let slot = store.resumeRecord(for: claimed, owner: owner)
            try slot.save(Self.sampleRecord())

            slot.remove()

            #expect(try store.resumeRecord(id).load() == nil)
        }

        @Test("GIVEN a record whose JSON is damaged WHEN the slot loads it THEN .corruptRecord")
        func damagedRecordIsCorrupt() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let id = try #require(try store.add([fileDownload(directory, "a")]).first)
            try store.resumeRecord(id).save(Self.sampleRecord())
            try rawConnection(store).execute("UPDATE downloads SET record = substr(record, 1, 40) WHERE id = ?", [.integer(id)])

            let kind = storeErrorKind { _ = try store.resumeRecord(id).load() }

            #expect(kind == .corruptRecord)
            // The damage does not spill over: the item itself still reads.
            #expect(try store.item(id)?.state == .queued)
        }
    }
}

// MARK: - Damaged rows

extension QueueStoreTests {
    @Suite("Damaged rows")
    struct DamagedRows {
        @Test(
            "GIVEN two queued items, the first with damaged options WHEN the store lists, claims and removes THEN the damaged one is listed, claimed and removed with its damage named, and the other one is claimed next"
        )
        func damagedOptionsStayInTheirOwnItem() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let ids = try store.add([fileDownload(directory, "a"), fileDownload(directory, "b")])
            try rawConnection(store).execute("UPDATE downloads SET options = '{damaged' WHERE id = ?", [.integer(ids[0])])
            let owner = LeaseOwner()

            let all = try store.all()
            let first = try store.claimNext(for: owner)
            let second = try store.claimNext(for: owner, settling: [.init(id: ids[0], input: .transferFailed, error: ("io", "damaged"))])

            #expect(all.map(\.id) == ids)
            #expect(all.map { $0.damage?.columns.map(\.name) } == [["options"], nil])
            #expect(first?.id == ids[0])
            #expect(first?.damage?.reason.hasPrefix("its stored options are damaged") == true)
            #expect(second?.id == ids[1])
            #expect(try store.item(ids[0])?.state == .failed)
            try store.remove(ids[0])
            #expect(try store.all().map(\.id) == [ids[1]])
        }

        @Test(
            "GIVEN a running item of a dead process and one of its items whose state was damaged WHEN another owner claims THEN the first is recovered and claimed, and the damaged one is failed with the reason, its lease released",
            arguments: [StoreValue.text("runn1ng"), .blob(Array("running".utf8)), .integer(3)])
        func recoveryFailsAnItemWhoseStateCannotBeRead(damagedState: StoreValue) throws {
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

        @Test(
            "GIVEN a paused item whose state was damaged at rest (no lease) WHEN any owner claims THEN it is failed with the reason and a queued one is still claimed"
        )
        func recoveryFailsAnItemDamagedAtRest() throws {
            let directory = try TemporaryDirectory(prefix: "haul-queue")
            let store = try QueueStore(directory: directory.path)
            let ids = try store.add([fileDownload(directory, "a", paused: true), fileDownload(directory, "b")])
            try rawConnection(store).execute("UPDATE downloads SET state = 'PAUSED' WHERE id = ?", [.integer(ids[0])])

            let claimed = try otherProcessStore(store).claimNext(for: LeaseOwner())

            #expect(claimed?.id == ids[1])
            let row = try #require(try rawConnection(store).query("SELECT state, last_error FROM downloads WHERE id = ?", [.integer(ids[0])]).first)
            #expect(row.string("state") == "failed")
            #expect(row.string("last_error")?.contains("its stored state is damaged") == true, "\(row)")
        }
    }
}

// MARK: - Forgetting secrets

extension QueueStoreTests {
    @Suite("Forgetting removed secrets")
    struct ForgettingSecrets {
        private static func walSize(_ store: QueueStore) -> Int {
            (try? FileManager.default.attributesOfItem(atPath: store.location + "-wal")[.size] as? Int) ?? 0
        }

        @Test("GIVEN a download with a header that completes WHEN forgetRemovedSecretsSoon runs THEN the write-ahead log is truncated and holds no copy of it")
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
            "GIVEN a download with nothing secret that completes WHEN forgetRemovedSecretsSoon runs THEN the log is left as it is (the usual batch pays nothing)"
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
    @Suite("Crash safety")
    struct Crash {
        @Test("GIVEN a shell loop of `haul queue add` WHEN it and its child are killed with SIGKILL (3 times) THEN the store is intact and consistent")
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
    @Suite("Adding many into one directory")
    struct AddingManyIntoOneDirectory {
        @Test(
            "GIVEN items queued into one directory WHEN one more is added THEN its check for an unfinished twin looks it up by directory and URL, not through every item"
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
