import Foundation
import Synchronization
import Testing

@testable import HaulStore

/// What the record keeper writes to its store: nothing a download does not need (each write of the
/// queue's store is a commit that every worker of a batch waits for).
@Suite("RecordKeeper")
struct RecordKeeperTests {
    /// A store that remembers its record and counts the calls that reach it.
    final class CountingStore: ResumeRecordStore {
        struct Counts {
            var record: ResumeRecord?
            var corrupt = false
            var saves = 0
            var removes = 0
        }
        let counts = Mutex(Counts())
        let settlesFinishedRecord: Bool

        init(record: ResumeRecord? = nil, corrupt: Bool = false, settlesFinishedRecord: Bool = false) {
            self.settlesFinishedRecord = settlesFinishedRecord
            counts.withLock {
                $0.record = record
                $0.corrupt = corrupt
            }
        }

        func load() throws(StoreError) -> ResumeRecord? {
            let (record, corrupt) = counts.withLock { ($0.record, $0.corrupt) }
            if corrupt { throw StoreError(.corruptRecord, "damaged") }
            return record
        }

        func save(_ record: ResumeRecord) throws(StoreError) {
            counts.withLock {
                $0.record = record
                $0.corrupt = false
                $0.saves += 1
            }
        }

        func remove() {
            counts.withLock {
                $0.record = nil
                $0.corrupt = false
                $0.removes += 1
            }
        }

        var removes: Int { counts.withLock { $0.removes } }
        var record: ResumeRecord? { counts.withLock { $0.record } }
    }

    static func sample() -> ResumeRecord {
        ResumeRecord(originalURL: "http://127.0.0.1/f", finalURL: "http://127.0.0.1/f")
    }

    @Test func aStoreReadEmptyIsNotWrittenToForget() throws {
        // GIVEN a fresh download: its store has no record
        let store = CountingStore()
        let keeper = RecordKeeper(store: store)
        #expect(try keeper.load() == nil)
        // WHEN the runner forgets whatever stale record there might be
        keeper.discardStale()
        // THEN the store was not written (a fresh queued download costs no commit for it)
        #expect(store.removes == 0)
    }

    @Test func aRecordThatWasThereOrCouldNotBeReadIsForgotten() throws {
        // A record this run loaded but will not use
        let loaded = CountingStore(record: Self.sample())
        let keeper = RecordKeeper(store: loaded)
        _ = try keeper.load()
        keeper.discardStale()
        #expect(loaded.removes == 1)
        #expect(loaded.record == nil)

        // A damaged one
        let damaged = CountingStore(corrupt: true)
        let second = RecordKeeper(store: damaged)
        #expect(throws: StoreError.self) { try second.load() }
        second.discardStale()
        #expect(damaged.removes == 1)

        // One never loaded (another download of the same layout)
        let unread = CountingStore(record: Self.sample())
        RecordKeeper(store: unread).discardStale()
        #expect(unread.removes == 1)
    }

    @Test func aFinishedRecordIsLeftToAStoreThatSettlesIt() throws {
        // GIVEN the queue's kind of store, which forgets a finished record in the completing commit
        let store = CountingStore(settlesFinishedRecord: true)
        let keeper = RecordKeeper(store: store)
        _ = try keeper.load()
        var record = Self.sample()
        record.finishedLength = 10
        try keeper.save(&record, syncedLength: 10)
        // WHEN the finished file is in place and the keeper forgets the record
        keeper.remove()
        // THEN nothing more is written now: the settlement clears it
        #expect(store.removes == 0)
        #expect(store.record?.finishedLength == 10)
        #expect(!keeper.isStored)
    }

    @Test func anUnfinishedRecordOrAFileRecordIsRemoved() throws {
        // An unfinished record in the queue's kind of store (a download given up) is removed
        let queueLike = CountingStore(settlesFinishedRecord: true)
        let keeper = RecordKeeper(store: queueLike)
        var record = Self.sample()
        try keeper.save(&record, syncedLength: 0)
        keeper.remove()
        #expect(queueLike.removes == 1)

        // A finished record beside the file (no settlement will clear it) is removed
        let fileLike = CountingStore()
        let second = RecordKeeper(store: fileLike)
        var finished = Self.sample()
        finished.finishedLength = 10
        try second.save(&finished, syncedLength: 10)
        second.remove()
        #expect(fileLike.removes == 1)
        #expect(fileLike.record == nil)
    }
}
