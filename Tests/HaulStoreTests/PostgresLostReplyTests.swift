import Foundation
import HaulCore
import HaulStore
import HaulTestSupport
import Testing

/// A PostgreSQL server whose reply to a COMMIT is lost (the connection cut right after the server
/// committed): the store runs the transaction again, and that second run must not change what the
/// first one did. Between the worker and the server, a relay that cuts the connection there.
@Suite("PostgreSQL store: a COMMIT whose reply was lost", .serialized)
struct PostgresLostReplyTests {
    /// A private cluster, a relay to it, and a store that reaches the cluster through the relay.
    static func relayedStore() throws -> (PostgresCluster, TCPRelay, QueueStore) {
        let cluster = try PostgresCluster()
        do {
            let relay = try TCPRelay(to: cluster.port)
            let store = try QueueStore(postgres: "postgresql://haul@127.0.0.1:\(relay.port)/postgres", reconnectSeconds: 10)
            return (cluster, relay, store)
        } catch {
            cluster.stop()
            throw error
        }
    }

    static func stop(_ cluster: PostgresCluster, _ relay: TCPRelay) {
        relay.stop()
        cluster.stop()
    }

    @Test("GIVEN two queued items WHEN the reply to the first claim's COMMIT is lost THEN the claim returns the item it committed, and the other stays queued")
    func aClaimRunAgainReturnsTheItemItLeased() throws {
        let (cluster, relay, store) = try Self.relayedStore()
        defer { Self.stop(cluster, relay) }
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
        #expect(try cluster.psql("SELECT count(*) FROM downloads WHERE state = 'running'") == "1")
    }

    @Test("GIVEN a per-host limit WHEN the reply to a claim's COMMIT is lost THEN the claim run again returns the item it leased")
    func aLimitedClaimRunAgainReturnsTheItemItLeased() throws {
        let (cluster, relay, store) = try Self.relayedStore()
        defer { Self.stop(cluster, relay) }
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
        let (cluster, relay, store) = try Self.relayedStore()
        defer { Self.stop(cluster, relay) }
        relay.set(.cutAfterCommit(following: "INSERT INTO downloads"))

        let ids = try store.add([
            NewDownload(url: "http://127.0.0.1:1/a", destinationKind: .file, destination: "/tmp/haul-lost-a"),
            NewDownload(url: "http://127.0.0.1:1/b", destinationKind: .file, destination: "/tmp/haul-lost-b"),
        ])

        #expect(relay.cuts == 1)
        #expect(ids.count == 2)
        #expect(try cluster.psql("SELECT count(*) FROM downloads") == "2")
        #expect(try store.all().map(\.id).sorted() == ids.sorted())
    }
}
