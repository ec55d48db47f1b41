import Foundation
import HaulCore
import HaulStore
import HaulTestSupport
import Testing

// Leases: renewal, the recovery of expired ones, and the fencing of a transfer whose lease was lost.
extension QueueStorageConformanceTests {
    @Test(
        "GIVEN a claimed item whose lease expired WHEN another worker claims THEN it is rescued under epoch 2 and the first worker's writes are all refused",
        arguments: StoreKind.allCases)
    func fencing(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let first = try harness.open()
        let id = try #require(try first.add([harness.download("a")]).first)
        let stale = try #require(try first.claimOne(for: LeaseOwner()))
        try harness.expireLeases()
        let second = try harness.open()
        let rescuer = LeaseOwner()
        let rescued = try #require(try second.claimOne(for: rescuer))
        #expect(rescued.id == id)
        #expect(rescued.leaseEpoch == stale.leaseEpoch + 1)
        #expect(rescued.attempts == 2)
        // The stale worker: progress, record and settlement all name epoch 1.
        #expect(storeErrorKind { try first.writeProgress(bytes: 7, under: stale) } == .conflict)
        let record = ResumeRecord(originalURL: "http://127.0.0.1:1/a", finalURL: "http://127.0.0.1:1/a")
        #expect(storeErrorKind { try first.claimedRecord(stale).save(record) } == .conflict)
        try first.settleOnly(for: LeaseOwner(), [Settle.completed(stale, bytes: 7, path: "/nowhere")])
        let after = try #require(try second.item(id))
        #expect(after.state == .running)
        #expect(after.bytes == 0)
        #expect(after.recordText == nil)
        // The rescuer's own writes go through.
        try second.writeProgress(bytes: 9, totalBytes: 9, under: rescued)
        try second.claimedRecord(rescued).save(record)
        try second.settleOnly(for: rescuer, [Settle.completed(rescued, bytes: 9, path: harness.directory.file("out/a"))])
        #expect(try second.item(id)?.state == .completed)
        #expect(try second.item(id)?.bytes == 9)
    }

    @Test(
        "GIVEN an item paused and claimed again by the same owner WHEN writes name its first claim THEN progress, record and settlement are refused, the second claim's go through",
        arguments: StoreKind.allCases)
    func anEarlierClaimOfTheSameOwnerIsFenced(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let id = try #require(try store.add([harness.download("a")]).first)
        let owner = LeaseOwner()
        let first = try #require(try store.claimOne(for: owner))
        try store.apply(.pauseRequested, to: id)
        try store.settleOnly(for: owner, [Settle.fenced(first, .transferPaused)])
        try store.apply(.resumeRequested, to: id)
        let second = try #require(try store.claimOne(for: owner))
        #expect(second.leaseEpoch == first.leaseEpoch + 1)
        let record = ResumeRecord(originalURL: "http://127.0.0.1:1/a", finalURL: "http://127.0.0.1:1/a")

        #expect(storeErrorKind { try store.writeProgress(bytes: 5, under: first) } == .conflict)
        #expect(storeErrorKind { try store.claimedRecord(first).save(record) } == .conflict)
        try store.settleOnly(for: owner, [Settle.completed(first, bytes: 5, path: "/nowhere")])

        let after = try #require(try store.item(id))
        #expect(after.state == .running)
        #expect(after.bytes == 0)
        #expect(after.recordText == nil)
        try store.writeProgress(bytes: 6, under: second)
        try store.claimedRecord(second).save(record)
        #expect(try store.item(id)?.bytes == 6)
        #expect(try store.record(of: id).load() == record)
    }

    @Test(
        "GIVEN a lease WHEN renewed THEN its items are reported; once rescued by another THEN the first owner's renewal no longer reports it",
        arguments: StoreKind.allCases)
    func renewals(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let id = try #require(try store.add([harness.download("a")]).first)
        let owner = LeaseOwner()
        let claimed = try #require(try store.claimOne(for: owner))
        try store.apply(.pauseRequested, to: id)
        #expect(try store.renew(for: owner, holding: [claimed]) == [id: .pausing])
        try harness.expireLeases()
        _ = try harness.open().claimOne(for: LeaseOwner())
        #expect(try store.renew(for: owner, holding: [claimed])[id] == nil)
        #expect(try store.item(id)?.state == .paused)
    }

    @Test(
        "GIVEN two items leased to one owner, one of which it does not know of WHEN it renews what it knows THEN only that lease is extended, and the other expires and is rescued",
        arguments: StoreKind.allCases)
    func renewalsExtendOnlyKnownLeases(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let ids = try store.add([harness.download("a"), harness.download("b")])
        let owner = LeaseOwner()
        let known = try #require(try store.claimOne(for: owner, among: [ids[0]]))
        // A claim whose answer never reached the worker: leased to it, unknown to it.
        _ = try #require(try store.claimOne(for: owner, among: [ids[1]]))
        try harness.expireLeases()
        #expect(try store.renew(for: owner, holding: [known]) == [ids[0]: .running])
        let rescuer = LeaseOwner()
        #expect(try harness.open().claimOne(for: rescuer)?.id == ids[1])
        #expect(try store.item(ids[0])?.state == .running)
        var olderEpoch = known
        olderEpoch.leaseEpoch += 1
        #expect(try store.renew(for: owner, holding: [olderEpoch]).isEmpty, "another epoch's lease is not this one")
    }

    @Test(
        "GIVEN leases of two owners, one asked to pause WHEN renewLeases runs after they lapsed THEN it reports its own states and extends its leases before anyone recovers them",
        arguments: StoreKind.allCases)
    func renewLeasesReportsStates(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let ids = try store.add([harness.download("a"), harness.download("b"), harness.download("c")])
        let owner = LeaseOwner()
        let other = LeaseOwner()
        let first = try #require(try store.claimOne(for: owner))
        let second = try #require(try store.claimOne(for: owner))
        _ = try store.claimOne(for: other)
        try store.apply(.pauseRequested, to: ids[0])
        // Let the owner's leases lapse; renewal must bring them back before anyone recovers them.
        try harness.expireLeases(of: owner)

        let states = try store.renew(for: owner, holding: [first, second])

        #expect(states == [ids[0]: .pausing, ids[1]: .running])
        #expect((try harness.lease(of: ids[0]).expires ?? 0) > Date().timeIntervalSince1970 + store.leaseSeconds - 5)
        #expect(try harness.open().claimOne(for: LeaseOwner()) == nil)
        #expect(try store.item(ids[0])?.state == .pausing)
        #expect(try store.item(ids[1])?.state == .running)
        #expect(try harness.lease(of: ids[1]).owner == owner.encoded)
        #expect(try store.renew(for: LeaseOwner(), holding: [first, second]).isEmpty)
    }

    @Test(
        "GIVEN a live owner whose lease expired WHEN another owner claims THEN the item is recovered and claimed by it, and the same owner's unexpired lease is left alone",
        arguments: StoreKind.allCases)
    func recoversExpiredLeaseOfLiveOwner(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let ids = try store.add([harness.download("a"), harness.download("b")])
        let stale = LeaseOwner()
        #expect(try store.claimOne(for: stale)?.id == ids[0])
        #expect(try store.claimOne(for: stale)?.id == ids[1])
        try harness.expireLease(of: ids[0])
        let other = LeaseOwner()

        let reclaimed = try harness.open().claimOne(for: other)

        #expect(stale.isAlive)
        #expect(reclaimed?.id == ids[0])
        #expect(reclaimed?.state == .running)
        #expect(try harness.lease(of: ids[0]).owner == other.encoded)
        // The unexpired lease of the same live owner is left alone.
        #expect(try harness.lease(of: ids[1]).owner == stale.encoded)
        #expect(try harness.open().claimOne(for: other) == nil)
    }

    @Test("GIVEN a pausing item whose lease expired WHEN another worker claims THEN it becomes paused and its lease is released", arguments: StoreKind.allCases)
    func recoversPausingItemOfLostOwner(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let id = try #require(try store.add([harness.download("a")]).first)
        _ = try store.claimOne(for: LeaseOwner())
        try store.apply(.pauseRequested, to: id)
        try harness.expireLeases()

        let claimed = try harness.open().claimOne(for: LeaseOwner())

        #expect(claimed == nil)
        #expect(try store.item(id)?.state == .paused)
        #expect(try harness.lease(of: id).owner == nil)
    }

    @Test(
        "GIVEN a cancelling item whose lease expired WHEN another worker claims THEN it becomes cancelled and its lease is released",
        arguments: StoreKind.allCases)
    func recoversCancellingItemOfLostOwner(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let id = try #require(try store.add([harness.download("a")]).first)
        _ = try store.claimOne(for: LeaseOwner())
        try store.apply(.cancelRequested, to: id)
        try harness.expireLeases()

        let claimed = try harness.open().claimOne(for: LeaseOwner())

        #expect(claimed == nil)
        #expect(try store.item(id)?.state == .cancelled)
        #expect(try harness.lease(of: id).owner == nil)
    }

    @Test(
        "GIVEN a cancelling item with a header and a password in its URL whose lease expired WHEN a claim recovers it THEN it is cancelled and keeps neither",
        arguments: StoreKind.allCases)
    func recoveredCancellationKeepsNoSecret(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let id = try harness.addCarryingSecrets(store, "a")
        _ = try store.claimOne(for: LeaseOwner())
        try store.apply(.cancelRequested, to: id)
        try harness.expireLeases()

        _ = try harness.open().claimOne(for: LeaseOwner())

        let item = try #require(try store.item(id))
        #expect(item.state == .cancelled)
        #expect(item.headers.isEmpty)
        #expect(item.url == "http://alice@127.0.0.1:1/a")
    }

    @Test(
        "GIVEN an owner whose expired lease was taken over WHEN it reports completion, alone or riding on its next claim THEN the store refuses it and the new owner settles it",
        arguments: StoreKind.allCases)
    func staleOwnerCannotSettleTakenItem(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let id = try #require(try store.add([harness.download("a")]).first)
        let stale = LeaseOwner()
        let claimed = try #require(try store.claimOne(for: stale))
        try harness.expireLease(of: id)
        let successor = LeaseOwner()
        #expect(try harness.open().claimOne(for: successor)?.id == id)
        #expect(try store.renew(for: stale, holding: [claimed]).isEmpty)

        let staleCompletion = storeErrorKind { _ = try store.apply(.transferCompleted, to: id, as: stale) }
        // A settlement riding on the stale owner's next claim is skipped, not applied.
        try store.settleOnly(for: stale, [Settle.unfenced(id, .transferCompleted, finished: (1, "/x"))])

        #expect(staleCompletion == .conflict)
        #expect(try store.item(id)?.state == .running)
        #expect(try store.item(id)?.attempts == 2)
        // AND the real owner settles it
        try store.apply(.transferCompleted, to: id, as: successor)
        #expect(try store.item(id)?.state == .completed)
    }

    @Test(
        "GIVEN a store opened with one-second leases WHEN its owner stops renewing THEN another worker rescues the item once the second is over",
        arguments: StoreKind.allCases)
    func aShortLeaseRunsOut(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open(leaseSeconds: 1)
        let id = try #require(try store.add([harness.download("a")]).first)
        _ = try #require(try store.claimOne(for: LeaseOwner()))
        #expect(try harness.open(leaseSeconds: 1).claimOne(for: LeaseOwner()) == nil, "the lease still runs")

        Thread.sleep(forTimeInterval: 1.5)
        let rescued = try harness.open(leaseSeconds: 1).claimOne(for: LeaseOwner())

        #expect(store.leaseSeconds == 1)
        #expect(rescued?.id == id)
        #expect(rescued?.leaseEpoch == 2)
    }

    @Test(
        "GIVEN a store opened with one-second leases WHEN its owner renews every 0.3 s THEN no other worker takes the item past the first second",
        arguments: StoreKind.allCases)
    func aRenewedShortLeaseHolds(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open(leaseSeconds: 1)
        let id = try #require(try store.add([harness.download("a")]).first)
        let owner = LeaseOwner()
        let claimed = try #require(try store.claimOne(for: owner))

        for _ in 0..<6 {
            Thread.sleep(forTimeInterval: 0.3)
            #expect(try store.renew(for: owner, holding: [claimed]) == [id: .running])
        }

        #expect(try harness.open(leaseSeconds: 1).claimOne(for: LeaseOwner()) == nil)
        #expect(try harness.lease(of: id).owner == owner.encoded)
    }
}
