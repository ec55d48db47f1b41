import Foundation
import HaulCore
import HaulStore
import HaulTestSupport
import Testing

/// What both stores promise, run against each (`StoreKind`): the same inputs, the same answers.
/// The PostgreSQL cases start a private cluster each (about a second).
@Suite("QueueStorage conformance", .serialized)
struct QueueStorageConformanceTests {
    @Test("GIVEN items of several priorities WHEN claimed THEN by priority then order, each once, each under a new epoch", arguments: StoreKind.allCases)
    func claimOrder(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let ids = try store.add([harness.download("a"), harness.download("b", priority: 5), harness.download("c")])
        let owner = LeaseOwner()
        var claimed: [Int64] = []
        var epochs: [Int64] = []
        while let item = try store.claimNext(for: owner, among: nil, settling: []) {
            claimed.append(item.id)
            epochs.append(item.leaseEpoch)
            #expect(item.state == .running)
            #expect(item.attempts == 1)
        }
        #expect(claimed == [ids[1], ids[0], ids[2]])
        #expect(epochs == [1, 1, 1])
        #expect(try store.hasPendingWork(among: nil))
        #expect(try !store.hasPendingWork(among: [999]))
    }

    @Test(
        "GIVEN a claimed item whose lease expired WHEN another worker claims THEN it is rescued under epoch 2 and the first worker's writes are all refused",
        arguments: StoreKind.allCases)
    func fencing(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let first = try harness.open()
        let id = try #require(try first.add([harness.download("a")]).first)
        let staleOwner = LeaseOwner()
        let stale = try #require(try first.claimNext(for: staleOwner, among: nil, settling: []))
        try harness.expireLeases()
        let second = try harness.open()
        let rescuer = LeaseOwner()
        let rescued = try #require(try second.claimNext(for: rescuer, among: nil, settling: []))
        #expect(rescued.id == id)
        #expect(rescued.leaseEpoch == stale.leaseEpoch + 1)
        #expect(rescued.attempts == 2)
        // The stale worker: progress, record and settlement all name epoch 1.
        #expect(
            storeErrorKind { try first.updateProgress(stale.lease(for: staleOwner), bytes: 7, totalBytes: nil, bytesPerSecond: 1, finalPath: nil) } == .conflict
        )
        let record = ResumeRecord(originalURL: "http://127.0.0.1:1/a", finalURL: "http://127.0.0.1:1/a")
        #expect(storeErrorKind { try first.resumeRecord(for: stale, owner: staleOwner).save(record) } == .conflict)
        let staleSettlement = QueueSettlement(id: id, input: .transferCompleted, finished: (7, "/nowhere"), lease: stale.lease(for: staleOwner))
        _ = try first.claimNext(for: LeaseOwner(), among: [], settling: [staleSettlement])
        let after = try #require(try second.item(id))
        #expect(after.state == .running)
        #expect(after.bytes == 0)
        #expect(after.recordText == nil)
        // The rescuer's own writes go through.
        try second.updateProgress(rescued.lease(for: rescuer), bytes: 9, totalBytes: 9, bytesPerSecond: 1, finalPath: nil)
        try second.resumeRecord(for: rescued, owner: rescuer).save(record)
        let done = QueueSettlement(id: id, input: .transferCompleted, finished: (9, harness.directory.file("out/a")), lease: rescued.lease(for: rescuer))
        _ = try second.claimNext(for: rescuer, among: [], settling: [done])
        #expect(try second.item(id)?.state == .completed)
        #expect(try second.item(id)?.bytes == 9)
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
        let claimed = try #require(try store.claimNext(for: owner, among: nil, settling: []))
        let held = [claimed.lease(for: owner)]
        try store.apply(.pauseRequested, to: id)
        #expect(try store.renewLeases(held) == [id: .pausing])
        try harness.expireLeases()
        _ = try harness.open().claimNext(for: LeaseOwner(), among: nil, settling: [])
        #expect(try store.renewLeases(held)[id] == nil)
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
        let known = try #require(try store.claimNext(for: owner, among: [ids[0]], settling: []))
        // A claim whose answer never reached the worker: leased to it, unknown to it.
        _ = try #require(try store.claimNext(for: owner, among: [ids[1]], settling: []))
        try harness.expireLeases()
        #expect(try store.renewLeases([known.lease(for: owner)]) == [ids[0]: .running])
        let rescuer = LeaseOwner()
        #expect(try harness.open().claimNext(for: rescuer, among: nil, settling: [])?.id == ids[1])
        #expect(try store.item(ids[0])?.state == .running)
        #expect(try store.renewLeases([Lease(item: known.id, owner: owner, epoch: known.leaseEpoch + 1)]).isEmpty, "an older epoch's lease is not this one")
    }

    @Test(
        "GIVEN a limit of one per host WHEN claiming THEN one item of each host runs, and a host's next item only once its first settled",
        arguments: StoreKind.allCases)
    func perHostLimit(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let ids = try store.add([
            harness.download("a1", host: "a.example"), harness.download("a2", host: "a.example"), harness.download("b1", host: "b.example"),
        ])
        let owner = LeaseOwner()
        let rules = ClaimRules(maxPerHost: 1)
        let first = try #require(try store.claimNext(for: owner, among: nil, settling: [], rules: rules))
        let second = try #require(try harness.open().claimNext(for: LeaseOwner(), among: nil, settling: [], rules: rules))
        #expect([first.id, second.id] == [ids[0], ids[2]])
        #expect(try store.claimNext(for: owner, among: nil, settling: [], rules: rules) == nil)
        let done = QueueSettlement(id: first.id, input: .transferCompleted, finished: (1, "/x"), lease: first.lease(for: owner))
        #expect(try store.claimNext(for: owner, among: nil, settling: [done], rules: rules)?.id == ids[1])
        // Without the rule nothing holds a claim back.
        let third = try #require(try store.add([harness.download("a3", host: "a.example")]).first)
        #expect(try store.claimNext(for: owner, among: nil, settling: [])?.id == third)
    }

    @Test(
        "GIVEN a full host's many queued items ahead of another host's WHEN claiming THEN the other host's item is found past the first page",
        arguments: StoreKind.allCases)
    func perHostLimitPastTheFirstPage(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let ahead = (0..<20).map { harness.download("a\($0)", host: "a.example") }
        let ids = try store.add(ahead + [harness.download("b", host: "b.example")])
        let rules = ClaimRules(maxPerHost: 1)
        let first = try #require(try store.claimNext(for: LeaseOwner(), among: nil, settling: [], rules: rules))
        #expect(first.id == ids[0])
        #expect(try store.claimNext(for: LeaseOwner(), among: nil, settling: [], rules: rules)?.id == ids[20])
    }

    @Test("GIVEN an item put back with retryAfter WHEN claimed at once THEN nothing; after the delay THEN it is claimed", arguments: StoreKind.allCases)
    func putBack(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let id = try #require(try store.add([harness.download("a")]).first)
        let owner = LeaseOwner()
        let item = try #require(try store.claimNext(for: owner, among: nil, settling: []))
        let back = QueueSettlement(id: id, input: .ownerLost, lease: item.lease(for: owner), retryAfter: 1)
        #expect(try store.claimNext(for: owner, among: nil, settling: [back]) == nil)
        #expect(try store.item(id)?.state == .queued)
        Thread.sleep(forTimeInterval: 1.2)
        #expect(try store.claimNext(for: owner, among: nil, settling: [])?.id == id)
    }

    @Test("GIVEN four workers claiming at once WHEN the queue drains THEN every item is claimed exactly once", arguments: StoreKind.allCases)
    func concurrentClaims(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let ids = try harness.open().add((0..<60).map { harness.download("f\($0)") })
        let stores = try (0..<4).map { _ in try harness.open() }
        let claims = ClaimLog()
        DispatchQueue.concurrentPerform(iterations: 4) { index in
            let owner = LeaseOwner()
            var pending: [QueueSettlement] = []
            while let item = try? stores[index].claimNext(for: owner, among: nil, settling: pending) {
                claims.append(item.id)
                pending = [QueueSettlement(id: item.id, input: .transferCompleted, finished: (0, "/x"), lease: item.lease(for: owner))]
            }
            _ = try? stores[index].claimNext(for: owner, among: [], settling: pending)
        }
        #expect(claims.sorted() == ids)
        #expect(try harness.open().all().allSatisfy { $0.state == .completed })
    }

    @Test(
        "GIVEN a download with a header or a password WHEN added THEN a shared store refuses it (.secretRefused) and a local one keeps it",
        arguments: StoreKind.allCases)
    func secrets(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        var withHeader = harness.download("a")
        withHeader.headers = [HTTPHeaders.Field(name: "Authorization", value: "Bearer s3cret")]
        var withPassword = harness.download("b")
        withPassword.url = "http://user:pw@127.0.0.1:1/b"
        for new in [withHeader, withPassword] {
            #expect(storeErrorKind { _ = try store.add([new]) } == (store.isShared ? .secretRefused : nil))
        }
        #expect(try store.all().count == (store.isShared ? 0 : 2))
        // By reference is fine on both.
        var byReference = harness.download("c")
        var options = StoredOptions()
        options.netrcFile = "/home/worker/.netrc"
        byReference.options = options
        #expect(try store.add([byReference]).count == 1)
    }

    @Test("GIVEN an unfinished item WHEN another is added to its destination THEN .conflict; removing a running item is refused", arguments: StoreKind.allCases)
    func destinations(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let id = try #require(try store.add([harness.download("a")]).first)
        #expect(storeErrorKind { _ = try store.add([harness.download("a")]) } == .conflict)
        #expect(try store.activeItem(for: harness.download("a"))?.id == id)
        _ = try store.claimNext(for: LeaseOwner(), among: nil, settling: [])
        #expect(storeErrorKind { try store.remove(id) } == .conflict)
        #expect(storeErrorKind { try store.apply(.start, to: id) } == .conflict)
    }
}

extension QueueStorageConformanceTests {
    @Test(
        "GIVEN an unfinished item, a completed one and a new download WHEN knownItems looks up all three at once THEN each gets what one lookup would give, in order",
        arguments: StoreKind.allCases)
    func knownItemsAnswersAsSingleLookupsDo(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let ids = try store.add([harness.download("done"), harness.download("waiting")])
        let owner = LeaseOwner()
        let claimed = try #require(try store.claimNext(for: owner, among: [ids[0]], settling: []))
        let completed = QueueSettlement(id: ids[0], input: .transferCompleted, finished: (3, "/tmp/done"), lease: claimed.lease(for: owner))
        _ = try store.claimNext(for: owner, among: [], settling: [completed])

        let lookups = [harness.download("waiting"), harness.download("done"), harness.download("new")]
        let known = try store.knownItems(for: lookups)

        #expect(known.map { $0.active?.id } == [ids[1], nil, nil])
        #expect(known.map { $0.completed?.id } == [nil, ids[0], nil])
        #expect(known.map { $0.active?.id } == (try lookups.map { try store.activeItem(for: $0)?.id }))
        #expect(known[1].completed?.id == (try store.completedItem(for: lookups[1])?.id))
    }
}

/// Claims seen by several threads.
final class ClaimLog: @unchecked Sendable {
    // Only touched under `lock`.
    private let lock = NSLock()
    private var ids: [Int64] = []

    func append(_ id: Int64) { lock.withLock { ids.append(id) } }
    func sorted() -> [Int64] { lock.withLock { ids.sorted() } }
}
