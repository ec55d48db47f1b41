import Foundation
import HaulCore
import HaulStore
import HaulTestSupport
import Testing

// Record slots, the scrub of secrets when an item settles, and rows damaged behind the store's back.
extension QueueStorageConformanceTests {
    static func sampleRecord(url: String = "http://h/a", finalURL: String = "http://cdn/a") -> ResumeRecord {
        ResumeRecord(
            originalURL: url, finalURL: finalURL, method: "GET", range: "bytes=0-99",
            validators: Validators(etag: EntityTag(isWeak: false, opaqueTag: "abc"), lastModified: "Wed, 21 Oct 2015 07:28:00 GMT"),
            totalLength: 1000, finalLength: 100, contentEncoding: nil, resourceStart: 0, syncedLength: 64,
            bootID: "boot-1", fileName: "a.bin", isAdopted: true, updatedAt: Date(timeIntervalSince1970: 1_700_000_000))
    }

    @Test("GIVEN an item's record slot WHEN a record is saved, loaded and removed THEN it round-trips and then is gone", arguments: StoreKind.allCases)
    func recordRoundTrips(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let ids = try store.add([harness.download("a"), harness.download("b")])
        let slot = store.record(of: ids[0])
        #expect(try slot.load() == nil)

        try slot.save(Self.sampleRecord())

        #expect(try slot.load() == Self.sampleRecord())
        #expect(try harness.open().record(of: ids[0]).load() == Self.sampleRecord())
        #expect(try store.record(of: ids[1]).load() == nil)
        slot.remove()
        #expect(try slot.load() == nil)
    }

    @Test(
        "GIVEN a claimed item's finished record WHEN its slot removes it THEN it stays until the completed settlement forgets it", arguments: StoreKind.allCases
    )
    func finishedRecordIsForgottenByTheCompletingCommit(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let id = try #require(try store.add([harness.download("a")]).first)
        let owner = LeaseOwner()
        let claimed = try #require(try store.claimOne(for: owner))
        let slot = store.claimedRecord(claimed)
        var finished = Self.sampleRecord()
        finished.finishedLength = 100
        try slot.save(finished)

        slot.remove()

        // A process dying here leaves a running item whose record still names its finished file.
        #expect(slot.settlesFinishedRecord)
        #expect(try store.record(of: id).load() == finished)
        _ = try store.claimOne(for: owner, settling: [Settle.unfenced(id, .transferCompleted, finished: (100, "/done/a"))])
        #expect(try store.record(of: id).load() == nil)
        #expect(try store.item(id)?.state == .completed)
    }

    @Test("GIVEN a claimed item's unfinished record WHEN its slot removes it THEN it is gone at once", arguments: StoreKind.allCases)
    func unfinishedRecordIsRemovedAtOnce(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let id = try #require(try store.add([harness.download("a")]).first)
        let claimed = try #require(try store.claimOne(for: LeaseOwner()))
        let slot = store.claimedRecord(claimed)
        try slot.save(Self.sampleRecord())

        slot.remove()

        #expect(try store.record(of: id).load() == nil)
    }

    @Test(
        "GIVEN an item rescued from a stale worker, with the rescuer's record saved WHEN the stale worker's slot removes its record THEN the rescuer's record stays",
        arguments: StoreKind.allCases)
    func aStaleSlotRemovesNothing(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let id = try #require(try store.add([harness.download("a")]).first)
        let stale = try #require(try store.claimOne(for: LeaseOwner()))
        try harness.expireLeases()
        let rescued = try #require(try harness.open().claimOne(for: LeaseOwner()))
        try store.claimedRecord(rescued).save(Self.sampleRecord())

        store.claimedRecord(stale).remove()

        #expect(try store.record(of: id).load() == Self.sampleRecord())
    }

    @Test("GIVEN a record whose JSON is damaged WHEN the slot loads it THEN .corruptRecord, and the item itself still reads", arguments: StoreKind.allCases)
    func damagedRecordIsCorrupt(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let id = try #require(try store.add([harness.download("a")]).first)
        try store.record(of: id).save(Self.sampleRecord())
        try harness.sql("UPDATE downloads SET record = substr(record, 1, 40) WHERE id = \(id)")

        let refusal = storeErrorKind { _ = try store.record(of: id).load() }

        #expect(refusal == .corruptRecord)
        // The damage does not spill over: the item itself still reads.
        #expect(try store.item(id)?.state == .queued)
    }

    @Test(
        "GIVEN a running item with a header, a password in its URL and a record WHEN it completes THEN it keeps none of them",
        arguments: StoreKind.allCases)
    func completionKeepsNoSecret(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let id = try harness.addCarryingSecrets(store, "a")
        let owner = LeaseOwner()
        let claimed = try #require(try store.claimOne(for: owner))
        try store.claimedRecord(claimed).save(Self.sampleRecord(url: "http://alice:hunter2@127.0.0.1:1/a"))

        try store.settleOnly(for: owner, [Settle.completed(claimed, bytes: 100, path: harness.directory.file("out/a"))])

        let item = try #require(try store.item(id))
        #expect(item.state == .completed)
        #expect(item.headers.isEmpty)
        #expect(item.body == nil)
        #expect(item.url == "http://alice@127.0.0.1:1/a")
        #expect(item.recordText == nil)
    }

    @Test(
        "GIVEN a running item with a header, a password in its URL and a record naming passwords WHEN it is cancelled THEN it keeps its record without the passwords, and neither header nor password",
        arguments: StoreKind.allCases)
    func cancellationKeepsTheRecordWithoutPasswords(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let id = try harness.addCarryingSecrets(store, "a")
        let claimed = try #require(try store.claimOne(for: LeaseOwner()))
        let record = Self.sampleRecord(url: "http://alice:hunter2@127.0.0.1:1/a", finalURL: "http://bob:s3cret@cdn.example/a")
        try store.claimedRecord(claimed).save(record)

        try store.apply(.cancelRequested, to: id)
        try store.apply(.transferCancelled, to: id)

        let item = try #require(try store.item(id))
        #expect(item.state == .cancelled)
        #expect(item.headers.isEmpty)
        #expect(item.url == "http://alice@127.0.0.1:1/a")
        var scrubbed = record
        scrubbed.originalURL = "http://alice@127.0.0.1:1/a"
        scrubbed.finalURL = "http://bob@cdn.example/a"
        #expect(try store.record(of: id).load() == scrubbed)
    }

    @Test(
        "GIVEN a download whose proxy and mirror URLs carry passwords WHEN added THEN a shared store refuses it; once it completes THEN the options keep the URLs without the passwords",
        arguments: StoreKind.allCases)
    func completionScrubsTheOptionsPasswords(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        var options = StoredOptions()
        options.proxy = "http://carol:pw1@proxy.example:3128"
        options.mirrors = [URL(string: "http://dave:pw2@mirror.example/a")!, URL(string: "http://mirror2.example/a")!]
        options.connections = 2
        var new = harness.download("a")
        new.options = options
        let id: Int64
        if store.isShared {
            #expect(storeErrorKind { _ = try store.add([new]) } == .secretRefused)
            new.options = nil
            id = try #require(try store.add([new]).first)
            try harness.sql("UPDATE downloads SET options = '\(try options.encoded())' WHERE id = \(id)")
        } else {
            id = try #require(try store.add([new]).first)
        }
        #expect(try store.item(id)?.options == options)
        let owner = LeaseOwner()
        let claimed = try #require(try store.claimOne(for: owner))

        try store.settleOnly(for: owner, [Settle.completed(claimed)])

        var scrubbed = options
        scrubbed.proxy = "http://carol@proxy.example:3128"
        scrubbed.mirrors = [URL(string: "http://dave@mirror.example/a")!, URL(string: "http://mirror2.example/a")!]
        #expect(try store.item(id)?.options == scrubbed)
    }

    @Test(
        "GIVEN a running item with a header and a password in its URL WHEN it fails THEN it keeps both (queue resume must run it as asked)",
        arguments: StoreKind.allCases)
    func failureKeepsWhatARetryNeeds(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let id = try harness.addCarryingSecrets(store, "a")
        let owner = LeaseOwner()
        let claimed = try #require(try store.claimOne(for: owner))

        try store.settleOnly(for: owner, [Settle.fenced(claimed, .transferFailed, error: ("http", "401 Unauthorized"))])

        let item = try #require(try store.item(id))
        #expect(item.state == .failed)
        #expect(item.headers == [HTTPHeaders.Field(name: "X-Api-Key", value: "KEY-1")])
        #expect(item.url == "http://alice:hunter2@127.0.0.1:1/a")
    }

    @Test(
        "GIVEN two queued items, the first with damaged options WHEN the store lists, claims and removes THEN the damaged one is listed, claimed and removed with its damage named, and the other one is claimed next",
        arguments: StoreKind.allCases)
    func damagedOptionsStayInTheirOwnItem(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let ids = try store.add([harness.download("a"), harness.download("b")])
        try harness.sql("UPDATE downloads SET options = '{damaged' WHERE id = \(ids[0])")
        let owner = LeaseOwner()

        let all = try store.all()
        let first = try store.claimOne(for: owner)
        let second = try store.claimOne(for: owner, settling: [Settle.unfenced(ids[0], .transferFailed, error: ("io", "damaged"))])

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
        "GIVEN two leased items, one whose state was damaged, both leases expired WHEN another owner claims THEN the sound one is recovered and claimed, and the damaged one is failed with the reason, its lease released",
        arguments: StoreKind.allCases)
    func recoveryFailsAnItemWhoseStateCannotBeRead(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let ids = try store.add([harness.download("a"), harness.download("b")])
        let lost = LeaseOwner()
        _ = try store.claimOne(for: lost)
        _ = try store.claimOne(for: lost)
        try harness.sql("UPDATE downloads SET state = 'runn1ng' WHERE id = \(ids[1])")
        try harness.expireLeases()

        let reclaimed = try harness.open().claimOne(for: LeaseOwner())

        #expect(reclaimed?.id == ids[0])
        let state = try harness.column("state", of: ids[1])
        let lastError = try harness.column("last_error", of: ids[1])
        let category = try harness.column("error_category", of: ids[1])
        let leaseOwner = try harness.lease(of: ids[1]).owner
        #expect(state == "failed")
        #expect(lastError?.contains("its stored state is damaged") == true)
        #expect(category == "io")
        #expect(leaseOwner == nil)
        #expect(try store.item(ids[1])?.state == .failed)
    }

    @Test(
        "GIVEN a paused item whose state was damaged at rest (no lease) WHEN any owner claims THEN it is failed with the reason and a queued one is still claimed",
        arguments: StoreKind.allCases)
    func recoveryFailsAnItemDamagedAtRest(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let ids = try store.add([harness.download("a", paused: true), harness.download("b")])
        try harness.sql("UPDATE downloads SET state = 'PAUSED' WHERE id = \(ids[0])")

        let claimed = try harness.open().claimOne(for: LeaseOwner())

        #expect(claimed?.id == ids[1])
        let state = try harness.column("state", of: ids[0])
        let lastError = try harness.column("last_error", of: ids[0])
        #expect(state == "failed")
        #expect(lastError?.contains("its stored state is damaged") == true)
    }

    @Test(
        "GIVEN a queued item and one whose state was damaged WHEN the store counts pending work THEN the damaged one counts (a run must fail it)",
        arguments: StoreKind.allCases)
    func pendingCountIncludesADamagedState(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let ids = try store.add([harness.download("a"), harness.download("b")])
        try harness.sql("UPDATE downloads SET state = 'runn1ng' WHERE id = \(ids[1])")

        #expect(try store.all().map { $0.damage?.columns.map(\.name) } == [nil, ["state"]])
        let pending = try store.pendingCount()
        #expect(pending == 2)
    }
}
