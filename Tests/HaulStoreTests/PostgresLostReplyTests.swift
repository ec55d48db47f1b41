import Foundation
import HaulCore
import HaulStore
import HaulTestSupport
import Testing

/// A PostgreSQL server whose reply to a COMMIT is lost (the connection cut right after the server
/// committed): the store runs the transaction again, and that second run must not change what the
/// first one did. Between the worker and the server, a relay that cuts the connection there. The
/// server is the one the test process shares (a fresh database each): only the relay is cut.
@Suite("PostgreSQL store: a COMMIT whose reply was lost", .serialized)
struct PostgresLostReplyTests {
    /// A fresh database, a relay to its server, and a store that reaches the database through the relay.
    static func relayedStore() throws -> (PostgresTestDatabase, TCPRelay, QueueStore) {
        let database = try PostgresTestDatabase()
        do {
            let relay = try TCPRelay(to: database.port)
            let store = try QueueStore(postgres: "postgresql://haul@127.0.0.1:\(relay.port)/\(database.name)", reconnectSeconds: 10)
            return (database, relay, store)
        } catch {
            database.drop()
            throw error
        }
    }

    static func stop(_ database: PostgresTestDatabase, _ relay: TCPRelay) {
        relay.stop()
        database.drop()
    }

    @Test("GIVEN two queued items WHEN the reply to the first claim's COMMIT is lost THEN the claim returns the item it committed, and the other stays queued")
    func aClaimRunAgainReturnsTheItemItLeased() throws {
        let (database, relay, store) = try Self.relayedStore()
        defer { Self.stop(database, relay) }
        let ids = try store.add([
            NewDownload(url: "http://127.0.0.1:1/a", destinationKind: .file, destination: "/tmp/haul-lost-a"),
            NewDownload(url: "http://127.0.0.1:1/b", destinationKind: .file, destination: "/tmp/haul-lost-b"),
        ])
        let owner = LeaseOwner()
        relay.set(.cutAfterCommit(following: "SKIP LOCKED"))

        let claimed = try store.claimNext(for: owner)

        #expect(relay.cuts == 1, "the relay cut the connection after the claim's COMMIT")
        #expect(claimed?.id == ids[0], "the item the committed claim leased, not the next one")
        #expect(try store.item(ids[1])?.state == .queued, "no second item was leased by the run again")
        #expect(try database.psql("SELECT count(*) FROM downloads WHERE state = 'running'") == "1")
    }

    @Test("GIVEN a per-host limit WHEN the reply to a claim's COMMIT is lost THEN the claim run again returns the item it leased")
    func aLimitedClaimRunAgainReturnsTheItemItLeased() throws {
        let (database, relay, store) = try Self.relayedStore()
        defer { Self.stop(database, relay) }
        let ids = try store.add([
            NewDownload(url: "http://127.0.0.1:1/a", destinationKind: .file, destination: "/tmp/haul-lost-a"),
            NewDownload(url: "http://127.0.0.1:2/b", destinationKind: .file, destination: "/tmp/haul-lost-b"),
        ])
        relay.set(.cutAfterCommit(following: "SKIP LOCKED"))

        let claimed = try store.claimNext(for: LeaseOwner(), among: nil, settling: [], rules: ClaimRules(maxPerHost: 1))

        #expect(relay.cuts == 1)
        #expect(claimed?.id == ids[0])
        #expect(try store.item(ids[1])?.state == .queued)
    }

    @Test("GIVEN an addition WHEN the reply to its COMMIT is lost THEN the transaction run again returns the items it added, once each, with no conflict")
    func anAdditionRunAgainReturnsItsItems() throws {
        let (database, relay, store) = try Self.relayedStore()
        defer { Self.stop(database, relay) }
        relay.set(.cutAfterCommit(following: "INSERT INTO downloads"))

        let ids = try store.add([
            NewDownload(url: "http://127.0.0.1:1/a", destinationKind: .file, destination: "/tmp/haul-lost-a"),
            NewDownload(url: "http://127.0.0.1:1/b", destinationKind: .file, destination: "/tmp/haul-lost-b"),
        ])

        #expect(relay.cuts == 1)
        #expect(ids.count == 2)
        #expect(try database.psql("SELECT count(*) FROM downloads") == "2")
        #expect(try store.all().map(\.id).sorted() == ids.sorted())
    }
}
