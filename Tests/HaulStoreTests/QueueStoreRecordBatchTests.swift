import Foundation
import HaulCore
import HaulTestSupport
import Testing

@testable import HaulStore

/// A finish group's records saved in one statement (`QueueStore.saveRecords`), on both databases.
@Suite("Queue store: a group's records saved together")
struct QueueStoreRecordBatchTests {
    @Test(
        """
        GIVEN three claimed items, one of them leased again since (a stale epoch), and records whose text holds quotes, \
        commas, braces, backslashes and non-ASCII WHEN the three are saved together THEN the two still leased are saved \
        exactly, the stale one fails as a lost lease and keeps its row's record
        """,
        arguments: StoreKind.allCases)
    func recordsAreSavedTogetherUnderTheirLeases(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try #require(try harness.open() as? QueueStore)
        let ids = try store.add(["a", "b", "c"].map { harness.download($0) })
        let owner = LeaseOwner()
        let claimed = try store.claim(3, for: owner, among: nil, settling: [], rules: ClaimRules())
        #expect(claimed.map(\.id) == ids)
        // The third was lost and leased again: its claim's epoch is stale.
        try harness.expireLease(of: ids[2])
        let rescued = try #require(try harness.open().claimOne(for: LeaseOwner()))
        #expect(rescued.id == ids[2])
        var records: [ResumeRecord] = []
        for (index, name) in ["say \"hi\", {x}", "back\\slash \\\" é 🚀", "c"].enumerated() {
            var record = QueueStorageConformanceTests.sampleRecord(url: "http://h/\(index)")
            record.fileName = name
            records.append(record)
        }

        let failures = store.saveRecords(zip(claimed, records).map { ($0.id, $1, $0.lease(for: owner)) })

        #expect(failures[0] == nil && failures[1] == nil)
        #expect(failures[2]?.kind == .conflict)
        #expect(try store.resumeRecord(ids[0]).load() == records[0])
        #expect(try store.resumeRecord(ids[1]).load() == records[1])
        #expect(try store.resumeRecord(ids[2]).load() == nil)
    }

    @Test(
        "GIVEN two items outside any lease WHEN their records are saved together THEN both are saved (nothing fences them)",
        arguments: StoreKind.allCases)
    func unfencedRecordsAreSavedTogether(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try #require(try harness.open() as? QueueStore)
        let ids = try store.add(["a", "b"].map { harness.download($0) })
        let record = QueueStorageConformanceTests.sampleRecord()

        let failures = store.saveRecords(ids.map { ($0, record, nil) })

        #expect(failures == [nil, nil])
        #expect(try ids.allSatisfy { try store.resumeRecord($0).load() == record })
    }
}
