import Foundation
import HaulCore
import HaulStore
import HaulTestSupport
import Testing

/// `haul serve`'s event journal, on both stores: ids increase, a completion is journaled once per
/// item, the journal keeps its bound, and a completion a server never journaled is found.
extension QueueStorageConformanceTests {
    @Test(
        "GIVEN an event journal WHEN events are appended THEN ids increase, a second completion of an item is refused, and only the last `keeping` stay",
        arguments: StoreKind.allCases)
    func theJournalKeepsOrderOneCompletionAndItsBound(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        // GIVEN a start, a completion, and the same completion again
        let start = try #require(try store.appendEvent(item: 1, method: "aria2.onDownloadStart", keeping: 5))
        let completion = try #require(try store.appendEvent(item: 1, method: "aria2.onDownloadComplete", keeping: 5))
        let again = try store.appendEvent(item: 1, method: "aria2.onDownloadComplete", keeping: 5)
        // THEN the second completion is not journaled, and the ids increase
        #expect(again == nil)
        #expect(completion > start)
        #expect(try store.events(after: 0, limit: 10).events.map(\.method) == ["aria2.onDownloadStart", "aria2.onDownloadComplete"])
        // WHEN ten more go in with a bound of five
        var ids: [Int64] = []
        for item in Int64(2)...11 { ids.append(try #require(try store.appendEvent(item: item, method: "aria2.onDownloadStart", keeping: 5))) }
        // THEN the journal holds at most the last five, in order, and says which it keeps
        let page = try store.events(after: 0, limit: 100)
        #expect(page.events.map(\.id) == page.events.map(\.id).sorted())
        #expect(page.events.count <= 5 && page.events.last?.id == ids.last)
        #expect(page.newest == ids.last && page.oldest == page.events.first?.id)
        #expect(try store.events(after: ids[7], limit: 100).events.map(\.item) == [10, 11])
    }

    @Test(
        "GIVEN an item completed while no server journaled it WHEN missed completions are journaled THEN it gets one, once",
        arguments: StoreKind.allCases)
    func aCompletionNeverJournaledIsFoundOnce(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        // GIVEN two completed items, one of them journaled
        let ids = try store.add([harness.download("a"), harness.download("b")])
        let owner = LeaseOwner()
        for _ in ids {
            let claimed = try #require(try store.claimOne(for: owner))
            try store.settleOnly(for: owner, [Settle.completed(claimed, bytes: 1, path: harness.directory.file("out/\(claimed.id)"))])
        }
        _ = try store.appendEvent(item: ids[0], method: "aria2.onDownloadComplete", keeping: 100)
        // WHEN the missed completions are journaled, twice
        let first = try store.journalMissedCompletions(keeping: 100)
        let second = try store.journalMissedCompletions(keeping: 100)
        // THEN the other item got one, and nothing was journaled twice
        #expect(first.map(\.item) == [ids[1]])
        #expect(second.isEmpty)
        #expect(try store.events(after: 0, limit: 100).events.map(\.item).sorted() == ids.sorted())
    }

    @Test(
        "GIVEN a completion journaled and since trimmed WHEN the finished download is moved and missed completions are journaled THEN it gets no second one",
        arguments: StoreKind.allCases)
    func aCompletionTrimmedFromTheJournalIsNotJournaledAgainWhenItsDownloadIsMoved(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        // GIVEN a completed item whose completion was journaled (and sent)
        let ids = try store.add([harness.download("a")])
        let owner = LeaseOwner()
        let claimed = try #require(try store.claimOne(for: owner))
        try store.settleOnly(for: owner, [Settle.completed(claimed, bytes: 1, path: harness.directory.file("out/\(claimed.id)"))])
        _ = try #require(try store.appendEvent(item: ids[0], method: "aria2.onDownloadComplete", keeping: 2))
        // AND later events that pushed it out of the journal (a bound of two)
        usleep(1_100_000)
        for item in Int64(100)...102 { _ = try store.appendEvent(item: item, method: "aria2.onDownloadStart", keeping: 2) }
        #expect(try !store.events(after: 0, limit: 10).events.contains { $0.item == ids[0] })
        // WHEN the finished download is moved (haul.move), and a server starts again
        usleep(1_100_000)
        let moved = harness.directory.file("moved")
        try store.relocate(ids[0], kind: .file, destination: moved, finalPath: moved)
        let missed = try store.journalMissedCompletions(keeping: 2)
        // THEN its completion is not journaled (nor sent) a second time
        #expect(missed.map(\.item).isEmpty, "journaled again: \(missed)")
    }
}
