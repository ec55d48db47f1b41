import Foundation
import HaulCore
import HaulStore
import HaulTestSupport
import Testing

// Claims of several items in one transaction (`claim(_ count:)`): the order, per-host limits,
// settlements riding on them, workers racing with batches.
extension QueueStorageConformanceTests {
    @Test(
        "GIVEN six items of several priorities WHEN four are claimed in one call THEN the best four, best first, each leased once under a new epoch; the next call of four gets the other two",
        arguments: StoreKind.allCases)
    func claimsABatchBestFirst(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let ids = try store.add([
            harness.download("a"), harness.download("b", priority: 5), harness.download("c"), harness.download("d", priority: 9),
            harness.download("e", priority: -1), harness.download("f"),
        ])
        let owner = LeaseOwner()
        let first = try store.claim(4, for: owner, among: nil, settling: [], rules: ClaimRules())
        #expect(first.map(\.id) == [ids[3], ids[1], ids[0], ids[2]])
        #expect(first.allSatisfy { $0.state == .running && $0.leaseEpoch == 1 && $0.lease?.owner == owner })
        let second = try store.claim(4, for: owner, among: nil, settling: [], rules: ClaimRules())
        #expect(second.map(\.id) == [ids[5], ids[4]])
        #expect(try store.claim(4, for: owner, among: nil, settling: [], rules: ClaimRules()).isEmpty)
        for id in ids { #expect(try harness.lease(of: id).owner == owner.encoded) }
    }

    @Test(
        "GIVEN three items of one host and two of another WHEN four are claimed with at most one per host THEN one of each host, best first, and the rest stay queued",
        arguments: StoreKind.allCases)
    func aBatchKeepsThePerHostLimit(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let ids = try store.add([
            harness.download("a1", host: "a.example"), harness.download("a2", host: "a.example"), harness.download("b1", host: "b.example"),
            harness.download("a3", host: "a.example"), harness.download("b2", host: "b.example"),
        ])
        let claimed = try store.claim(4, for: LeaseOwner(), among: nil, settling: [], rules: ClaimRules(maxPerHost: 1))
        #expect(claimed.map(\.id) == [ids[0], ids[2]])
        #expect(try store.all().filter { $0.state == .queued }.map(\.id) == [ids[1], ids[3], ids[4]])
    }

    @Test(
        "GIVEN a batch of two claimed items WHEN both completions are settled with the next claim of two THEN both are completed and the next two leased, in one call",
        arguments: StoreKind.allCases)
    func aBatchSettlesAndClaims(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let ids = try store.add((0..<4).map { harness.download("f\($0)") })
        let owner = LeaseOwner()
        let first = try store.claim(2, for: owner, among: nil, settling: [], rules: ClaimRules())
        let next = try store.claim(2, for: owner, among: nil, settling: first.map { Settle.completed($0, bytes: 7, path: "/x\($0.id)") }, rules: ClaimRules())
        #expect(next.map(\.id) == [ids[2], ids[3]])
        for item in first {
            let stored = try #require(try store.item(item.id))
            #expect(stored.state == .completed)
            #expect(stored.bytes == 7)
            #expect(stored.finalPath == "/x\(item.id)")
        }
    }

    @Test(
        "GIVEN four workers claiming batches of three at once WHEN the queue drains THEN every item is claimed and completed exactly once",
        arguments: StoreKind.allCases)
    func concurrentBatchClaims(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let ids = try harness.open().add((0..<61).map { harness.download("f\($0)") })
        let stores = try (0..<4).map { _ in try harness.open() }
        let claims = ClaimLog()
        DispatchQueue.concurrentPerform(iterations: 4) { index in
            let owner = LeaseOwner()
            var pending: [QueueSettlement] = []
            while let batch = try? stores[index].claim(3, for: owner, among: nil, settling: pending, rules: ClaimRules()), !batch.isEmpty {
                for item in batch { claims.append(item.id) }
                pending = batch.map { Settle.completed($0, bytes: 0, path: "/x") }
            }
            try? stores[index].settleOnly(for: owner, pending)
        }
        #expect(claims.sorted() == ids)
        #expect(try harness.open().all().allSatisfy { $0.state == .completed })
    }

    @Test(
        "GIVEN three claimed items WHEN their settlements go in one claim, one of them twice and one for an id that is gone THEN each applies once, and the rest are skipped",
        arguments: StoreKind.allCases)
    func settlementsOfOneClaimReadTheirRowsOnce(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let ids = try store.add((0..<4).map { harness.download("s\($0)") })
        let owner = LeaseOwner()
        let claimed = try store.claim(3, for: owner, among: nil, settling: [], rules: ClaimRules())
        try #require(claimed.count == 3)
        let failed = Settle.fenced(claimed[1], .transferFailed, error: ("http", "404"))
        let settling = [
            Settle.completed(claimed[0], bytes: 5, path: "/a"), Settle.completed(claimed[0], bytes: 9, path: "/b"), failed,
            Settle.unfenced(999_999, .transferCompleted, finished: (1, "/gone")), Settle.completed(claimed[2], bytes: 6, path: "/c"),
        ]
        let next = try store.claim(1, for: owner, among: nil, settling: settling, rules: ClaimRules())
        #expect(next.map(\.id) == [ids[3]])
        let first = try #require(try store.item(claimed[0].id))
        #expect(first.state == .completed && first.bytes == 5 && first.finalPath == "/a")
        #expect(try store.item(claimed[1].id)?.state == .failed)
        #expect(try store.item(claimed[2].id)?.finalPath == "/c")
    }
}

// Batches of several workers at once under a per-host limit.
extension QueueStorageConformanceTests {
    @Test(
        "GIVEN thirty items of three hosts and four workers each claiming batches of four at once with at most two per host WHEN they claim, hold and settle for several rounds THEN no host ever has more than two items leased and every item completes once",
        arguments: StoreKind.allCases)
    func concurrentBatchesKeepThePerHostLimit(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let hosts = ["a.example", "b.example", "c.example"]
        let ids = try harness.open().add((0..<30).map { harness.download("h\($0)", host: hosts[$0 % 3]) })
        let hostOf = Dictionary(uniqueKeysWithValues: zip(ids, (0..<30).map { hosts[$0 % 3] }))
        let stores = try (0..<4).map { _ in try harness.open() }
        let observer = try harness.open()
        let claims = ClaimLog()
        let worst = ClaimLog()
        let rules = ClaimRules(maxPerHost: 2)
        DispatchQueue.concurrentPerform(iterations: 4) { index in
            let owner = LeaseOwner()
            var pending: [QueueSettlement] = []
            let deadline = Date() + 15
            while Date() < deadline {
                guard let batch = try? stores[index].claim(4, for: owner, among: nil, settling: pending, rules: rules) else { continue }
                for item in batch { claims.append(item.id) }
                // Held while the others claim: what is leased now is counted.
                if let all = try? observer.all() {
                    let leased = all.filter { $0.state == .running }
                    let most = hosts.map { host in leased.filter { hostOf[$0.id] == host }.count }.max() ?? 0
                    worst.append(Int64(most))
                }
                pending = batch.map { Settle.completed($0, bytes: 0, path: "/x") }
                if batch.isEmpty, (try? observer.all().allSatisfy { $0.state == .completed }) == true { break }
            }
            try? stores[index].settleOnly(for: owner, pending)
        }
        #expect(claims.sorted() == ids)
        #expect((worst.sorted().last ?? 0) <= 2, "a host had \(worst.sorted().last ?? 0) items leased at once")
        #expect(try harness.open().all().allSatisfy { $0.state == .completed })
    }
}

// A schema changed by another process under the statements this one prepared.
extension QueueStorageConformanceTests {
    @Test(
        "PostgreSQL: GIVEN a store whose reads, claims and settlements were prepared on its connection WHEN another process adds a column to the downloads table THEN the next read, claim of a batch and settlement of one all answer, and nothing is claimed twice"
    )
    func aMigrationUnderPreparedStatementsKeepsTheStoreWorking() throws {
        let harness = try StoreHarness(.postgres)
        defer { harness.stop() }
        let store = try harness.open()
        let ids = try store.add((0..<6).map { harness.download("m\($0)") })
        let owner = LeaseOwner()
        let first = try store.claim(2, for: owner, among: nil, settling: [], rules: ClaimRules())
        _ = try store.all()
        _ = try store.item(ids[0])
        // Another process migrates the table under every statement prepared so far.
        try harness.sql("ALTER TABLE downloads ADD COLUMN added_by_a_later_version TEXT DEFAULT 'x'")
        #expect(try store.item(ids[0])?.state == .running)
        #expect(try store.all().count == 6)
        let settling = first.map { Settle.completed($0, bytes: 3, path: "/m\($0.id)") }
        let next = try store.claim(2, for: owner, among: nil, settling: settling, rules: ClaimRules())
        #expect(next.map(\.id) == [ids[2], ids[3]])
        #expect(try first.allSatisfy { try store.item($0.id)?.state == .completed })
        try harness.sql("ALTER TABLE downloads DROP COLUMN added_by_a_later_version")
        let last = try store.claim(4, for: owner, among: nil, settling: next.map { Settle.completed($0, bytes: 3, path: "/n") }, rules: ClaimRules())
        #expect(last.map(\.id) == [ids[4], ids[5]])
        #expect(try store.all().filter { $0.state == .completed }.count == 4)
    }
}

// A batch of many ids (chosen among page by page on one machine) claimed several at a time.
extension QueueStorageConformanceTests {
    @Test(
        "GIVEN 600 queued items, a run of 300 of them (every other one) and a per-host limit of three WHEN it claims eight at a time and settles until nothing is left THEN each of its 300 is claimed once, never more than three at once, and none of the others",
        arguments: StoreKind.allCases)
    func aLargeBatchClaimsItsOwnSeveralAtATime(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let all = try store.add((0..<600).map { harness.download("p\($0)") })
        let mine = Set(all.enumerated().filter { $0.offset % 2 == 1 }.map(\.element))
        let owner = LeaseOwner()
        var claimed: [Int64] = []
        var pending: [QueueSettlement] = []
        var most = 0
        for _ in 0..<400 {
            let batch = try store.claim(8, for: owner, among: mine, settling: pending, rules: ClaimRules(maxPerHost: 3))
            most = max(most, batch.count)
            if batch.isEmpty && pending.isEmpty { break }
            claimed += batch.map(\.id)
            pending = batch.map { Settle.completed($0, bytes: 1, path: "/p\($0.id)") }
        }
        #expect(claimed.sorted() == mine.sorted())
        #expect(most == 3)
        #expect(try store.all().filter { $0.state == .completed }.count == 300)
    }

    @Test(
        "GIVEN a transfer that failed with a message holding a NUL byte (a hostile server's reason phrase) WHEN it is settled with the next claim THEN the settlement applies, the NUL kept as U+FFFD, and the claim goes on",
        arguments: StoreKind.allCases)
    func aFailureMessageWithANulIsSettled(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let ids = try store.add((0..<2).map { harness.download("n\($0)") })
        let owner = LeaseOwner()
        let first = try #require(try store.claimNext(for: owner))
        let failed = Settle.fenced(first, .transferFailed, error: ("http", "HTTP 500 bad\u{0}reason"))
        let next = try store.claimNext(for: owner, settling: [failed])
        #expect(next?.id == ids[1])
        let stored = try #require(try store.item(first.id))
        #expect(stored.state == .failed)
        #expect(stored.lastError == "HTTP 500 bad\u{FFFD}reason")
    }
}
