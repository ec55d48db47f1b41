import Foundation
import HaulCore
import HaulStore
import HaulTestSupport
import Testing

/// What only the PostgreSQL store has: migrations under an advisory lock, reconnection with
/// backoff, wake-ups by LISTEN/NOTIFY. Each test gets a fresh database in the cluster the test
/// process shares, but the one that stops and restarts the server starts a private cluster.
@Suite("PostgreSQL queue store", .serialized)
struct PostgresQueueStoreTests {
    @Test("PostgreSQL: GIVEN an empty database WHEN four workers open it at once THEN each migration is applied once, in order, and reopening changes nothing")
    func migrationsOnceUnderALock() throws {
        let database = try PostgresTestDatabase()
        defer { database.drop() }
        let opened = ClaimLog()
        DispatchQueue.concurrentPerform(iterations: 4) { index in
            if (try? QueueStore(postgres: database.uri, reconnectSeconds: 5)) != nil { opened.append(Int64(index)) }
        }
        #expect(opened.sorted() == [0, 1, 2, 3])
        let names = try database.psql("SELECT string_agg(name, ',' ORDER BY applied_at) FROM schema_migrations")
        #expect(
            names == "v1-downloads,v2-host-slots,v3-notify-queued,v4-destination-url,v5-claim-token,v6-add-token,v7-priority-bigint,v8-serve-events"
                + ",v9-move-intent")
        _ = try QueueStore(postgres: database.uri, reconnectSeconds: 5)
        #expect(try database.psql("SELECT count(*) FROM schema_migrations") == "9")
    }

    @Test("PostgreSQL: GIVEN a database with a migration this build does not know WHEN opened THEN .corruptStore naming it, and nothing changes")
    func newerDatabaseRefused() throws {
        let database = try PostgresTestDatabase()
        defer { database.drop() }
        _ = try QueueStore(postgres: database.uri, reconnectSeconds: 5)
        try database.psql("INSERT INTO schema_migrations VALUES ('v9-from-the-future', 0)")
        #expect(storeErrorKind { _ = try QueueStore(postgres: database.uri, reconnectSeconds: 5) } == .corruptStore)
        #expect(try database.psql("SELECT count(*) FROM schema_migrations") == "10")
    }

    @Test(
        "PostgreSQL: GIVEN an open store WHEN the server restarts THEN the next operation reconnects with backoff and succeeds; with the server gone for good THEN .unavailable"
    )
    func reconnects() throws {
        let cluster = try PostgresCluster()
        defer { cluster.stop() }
        let store = try QueueStore(postgres: cluster.uri(), reconnectSeconds: 4)
        let id = try #require(try store.add([NewDownload(url: "http://127.0.0.1:1/a", destinationKind: .file, destination: "/tmp/haul-pg-a")]).first)
        cluster.stopServer()
        let restart = Thread {
            Thread.sleep(forTimeInterval: 1)
            try? cluster.start()
        }
        restart.start()
        let started = Date()
        #expect(try store.item(id)?.state == .queued)
        #expect(Date().timeIntervalSince(started) >= 0.9, "it waited for the server")
        cluster.stopServer()
        let impatient = try? QueueStore(postgres: cluster.uri(), reconnectSeconds: 1)
        #expect(impatient == nil)
        #expect(storeErrorKind { _ = try store.all() } == .unavailable)
    }

    @Test("PostgreSQL: GIVEN an idle worker waiting for work WHEN another process adds an item THEN it wakes at once by NOTIFY, long before its deadline")
    func notifyWakesIdleWorkers() throws {
        let database = try PostgresTestDatabase()
        defer { database.drop() }
        let waiting = try QueueStore(postgres: database.uri, reconnectSeconds: 5)
        let adding = try QueueStore(postgres: database.uri, reconnectSeconds: 5)
        // The listener connects at the first wait.
        waiting.waitForWork(seconds: 0.3)
        let adder = Thread {
            Thread.sleep(forTimeInterval: 0.3)
            _ = try? adding.add([NewDownload(url: "http://127.0.0.1:1/a", destinationKind: .file, destination: "/tmp/haul-pg-notify")])
        }
        adder.start()
        let started = Date()
        waiting.waitForWork(seconds: 10)
        let waited = Date().timeIntervalSince(started)
        #expect(waited < 3, "woke after \(waited) s")
        #expect(try waiting.claimNext(for: LeaseOwner(), among: nil, settling: []) != nil)
    }
}

extension PostgresQueueStoreTests {
    @Test(
        "PostgreSQL: GIVEN a store that claimed a batch on statements prepared on its connection WHEN the server restarts THEN the next batch claim settles the first batch and leases the next items once, on statements prepared anew"
    )
    func aBatchClaimAfterARestartPreparesAnew() throws {
        let cluster = try PostgresCluster()
        defer { cluster.stop() }
        let store = try QueueStore(postgres: cluster.uri(), reconnectSeconds: 5)
        let ids = try store.add((0..<6).map { NewDownload(url: "http://127.0.0.1:1/r\($0)", destinationKind: .file, destination: "/tmp/haul-pg-r\($0)") })
        let owner = LeaseOwner()
        let first = try store.claim(3, for: owner, among: nil, settling: [], rules: ClaimRules(maxPerHost: 4))
        #expect(first.map(\.id) == Array(ids[0..<3]))
        cluster.stopServer()
        try cluster.start()
        let settling = first.map { QueueSettlement(id: $0.id, input: .transferCompleted, finished: (1, "/r\($0.id)"), lease: $0.lease) }
        let next = try store.claim(3, for: owner, among: nil, settling: settling, rules: ClaimRules(maxPerHost: 4))
        #expect(next.map(\.id) == Array(ids[3..<6]))
        #expect(try first.allSatisfy { try store.item($0.id)?.state == .completed })
        #expect(try store.all().filter { $0.state == .running }.map(\.id) == Array(ids[3..<6]))
    }
}
