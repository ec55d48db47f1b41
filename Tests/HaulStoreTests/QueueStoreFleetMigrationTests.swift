import Foundation
import HaulCore
import HaulStore
import HaulTestSupport
import Testing

/// Migration `v4-fleet` on a store that already holds items: what a user's existing queue goes through.
@Suite("Queue store: the v4-fleet migration")
struct QueueStoreFleetMigrationTests {
    @Test(
        "GIVEN a v3 store with items WHEN it opens with v4-fleet THEN each item's host is filled in from its URL, epochs start at 0, and the per-host limit counts them"
    )
    func backfillsHosts() throws {
        let directory = try TemporaryDirectory(prefix: "haul-queue-v4")
        defer { directory.remove() }
        let path = directory.file(QueueStore.fileName)
        let urls = ["http://Mirror.Example.COM:8080/a", "https://mirror.example.com/b", "http://other.example/c"]
        do {
            let store = try QueueStore(directory: directory.path)
            try store.add(urls.enumerated().map { NewDownload(url: $1, destinationKind: .file, destination: directory.file("out/\($0)")) })
        }
        // Back to what v3 had: no fleet columns, no record of v4 (nor of v5, which came after it).
        do {
            let db = try SQLiteConnection(path: path)
            try db.execute(
                """
                DROP INDEX downloads_destination_url;
                DELETE FROM schema_migrations WHERE name = 'v5-destination-url';
                DROP INDEX downloads_host;
                ALTER TABLE downloads DROP COLUMN host;
                ALTER TABLE downloads DROP COLUMN lease_epoch;
                ALTER TABLE downloads DROP COLUMN not_before;
                DELETE FROM schema_migrations WHERE name = 'v4-fleet';
                PRAGMA user_version = 3;
                """)
        }
        let store = try QueueStore(directory: directory.path)
        let hosts = try SQLiteConnection(path: path).query("SELECT host FROM downloads ORDER BY id").compactMap { $0.string("host") }
        #expect(hosts == ["mirror.example.com", "mirror.example.com", "other.example"])
        #expect(try store.all().allSatisfy { $0.leaseEpoch == 0 })
        let rules = ClaimRules(maxPerHost: 1)
        let owner = LeaseOwner()
        let first = try #require(try store.claimNext(for: owner, among: nil, settling: [], rules: rules))
        let second = try #require(try store.claimNext(for: owner, among: nil, settling: [], rules: rules))
        #expect(first.url == urls[0])
        #expect(first.leaseEpoch == 1)
        #expect(second.url == urls[2], "the second item of mirror.example.com waits for the first")
    }
}
