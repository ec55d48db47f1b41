import Foundation
import HaulCore
import HaulStore
import HaulTestSupport
import Synchronization
import Testing

// Claims: their order, `among:`, per-host limits, settlements riding on them, workers racing.
extension QueueStorageConformanceTests {
    @Test("GIVEN items of several priorities WHEN claimed THEN by priority then order, each once, each under a new epoch", arguments: StoreKind.allCases)
    func claimOrder(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let ids = try store.add([harness.download("a"), harness.download("b", priority: 5), harness.download("c")])
        let owner = LeaseOwner()
        var claimed: [Int64] = []
        var epochs: [Int64] = []
        while let item = try store.claimOne(for: owner) {
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
        "GIVEN items of several priorities WHEN claimed one by one THEN the highest priority goes first, then the lowest id, a paused one never, each leased to the owner for the lease's length",
        arguments: StoreKind.allCases)
    func claimsByPriorityThenID(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let ids = try store.add([
            harness.download("a", priority: 0), harness.download("b", priority: 5), harness.download("c", priority: 5),
            harness.download("d", priority: -1), harness.download("e", priority: 0), harness.download("f", priority: 9, paused: true),
        ])
        let owner = LeaseOwner()

        var order: [Int64] = []
        while let item = try store.claimOne(for: owner) {
            #expect(item.state == .running)
            order.append(item.id)
        }

        #expect(order == [ids[1], ids[2], ids[0], ids[4], ids[3]])
        #expect(try store.item(ids[5])?.state == .paused)
        let lease = try harness.lease(of: ids[1])
        #expect(lease.owner == owner.encoded)
        #expect((lease.expires ?? 0) > Date().timeIntervalSince1970 + store.leaseSeconds - 5)
    }

    @Test(
        "GIVEN three queued items WHEN setPriorities reorders two of them in one call THEN they are claimed in the new order and read back with it",
        arguments: StoreKind.allCases)
    func setPrioritiesReorders(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let ids = try store.add([harness.download("a"), harness.download("b"), harness.download("c")])

        try store.setPriorities([(id: ids[2], priority: 7), (id: ids[1], priority: 3)])

        #expect(try store.all().map(\.priority) == [0, 3, 7])
        let owner = LeaseOwner()
        var order: [Int64] = []
        while let item = try store.claimOne(for: owner) { order.append(item.id) }
        #expect(order == [ids[2], ids[1], ids[0]])
    }

    @Test("GIVEN a claim limited with among: WHEN better items exist outside the set THEN only items in the set are claimed", arguments: StoreKind.allCases)
    func claimsOnlyAmongGivenIDs(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let ids = try store.add([harness.download("a", priority: 9), harness.download("b", priority: 1), harness.download("c", priority: 2)])
        let owner = LeaseOwner()

        let first = try store.claimOne(for: owner, among: [ids[1], ids[2]])
        let second = try store.claimOne(for: owner, among: [ids[1], ids[2]])
        let third = try store.claimOne(for: owner, among: [ids[1], ids[2]])
        let none = try store.claimOne(for: owner, among: [])

        #expect(first?.id == ids[2])
        #expect(second?.id == ids[1])
        #expect(third == nil)
        #expect(none == nil)
        #expect(try store.item(ids[0])?.state == .queued)
        #expect(try store.hasPendingWork(among: [ids[0]]))
        #expect(try !store.hasPendingWork(among: [999]))
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
            while let item = try? stores[index].claimOne(for: owner, settling: pending) {
                claims.append(item.id)
                pending = [Settle.completed(item, bytes: 0, path: "/x")]
            }
            try? stores[index].settleOnly(for: owner, pending)
        }
        #expect(claims.sorted() == ids)
        #expect(try harness.open().all().allSatisfy { $0.state == .completed })
    }

    @Test(
        "GIVEN 100 items and two stores on one database WHEN two threads claim until empty THEN each id is claimed exactly once, and leased to its claimer",
        arguments: StoreKind.allCases)
    func twoOwnersNeverClaimTheSameItem(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let setup = try harness.open()
        let ids = try setup.add((1...100).map { harness.download("item-\($0)") })
        let stores = [try harness.open(), try harness.open()]
        let owners = [LeaseOwner(), LeaseOwner()]
        let claims = Mutex<[[Int64]]>([[], []])
        let failures = Mutex<[String]>([])
        let done = DispatchGroup()
        let ready = Atomic<Int>(0)

        for index in 0..<2 {
            done.enter()
            let thread = Thread { [stores, owners] in
                defer { done.leave() }
                // Start together, so the claims really race.
                ready.add(1, ordering: .acquiringAndReleasing)
                while ready.load(ordering: .acquiring) < 2 {}
                do {
                    while let item = try stores[index].claimOne(for: owners[index]) {
                        claims.withLock { $0[index].append(item.id) }
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            thread.start()
        }
        #expect(done.wait(timeout: .now() + 60) == .success)

        let byOwner = claims.withLock { $0 }
        #expect(failures.withLock { $0 }.isEmpty)
        #expect(Set(byOwner[0]).isDisjoint(with: byOwner[1]))
        #expect((byOwner[0] + byOwner[1]).sorted() == ids)
        #expect(try setup.all().allSatisfy { $0.state == .running })
        let counts = try harness.leaseCounts(of: ids)
        #expect(counts[owners[0].encoded, default: 0] == byOwner[0].count)
        #expect(counts[owners[1].encoded, default: 0] == byOwner[1].count)
    }

    @Test(
        "GIVEN a finished transfer WHEN its settlement rides on the next claim THEN both land in one transaction, the lease released",
        arguments: StoreKind.allCases
    )
    func settlementWithClaim(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let ids = try store.add([harness.download("a"), harness.download("b")])
        let owner = LeaseOwner()
        let first = try #require(try store.claimOne(for: owner))

        let second = try store.claimOne(for: owner, settling: [Settle.unfenced(first.id, .transferCompleted, finished: (42, "/done/a"))])

        #expect(second?.id == ids[1])
        let settled = try #require(try store.item(first.id))
        #expect(settled.state == .completed)
        #expect(settled.bytes == 42)
        #expect(settled.totalBytes == 42)
        #expect(settled.finalPath == "/done/a")
        #expect(try harness.lease(of: first.id).owner == nil)
    }

    @Test(
        "GIVEN a failed transfer WHEN its settlement rides on the next claim THEN the item is failed with its category and message and its lease released",
        arguments: StoreKind.allCases)
    func failedSettlementWithClaim(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let ids = try store.add([harness.download("a"), harness.download("b")])
        let owner = LeaseOwner()
        let first = try #require(try store.claimOne(for: owner))

        let second = try store.claimOne(for: owner, settling: [Settle.fenced(first, .transferFailed, error: ("http", "503 Service Unavailable"))])

        #expect(second?.id == ids[1])
        let failed = try #require(try store.item(ids[0]))
        #expect(failed.state == .failed)
        #expect(failed.errorCategory == "http")
        #expect(failed.lastError == "503 Service Unavailable")
        #expect(try harness.lease(of: ids[0]).owner == nil)
        #expect(try !store.hasPendingWork(among: [ids[0]]))
    }

    @Test(
        "GIVEN a failed item WHEN it is resumed and claimed again THEN it runs under epoch 2 as attempt 2, its error cleared by the claim",
        arguments: StoreKind.allCases)
    func aSecondClaimCountsAnAttempt(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let id = try #require(try store.add([harness.download("a")]).first)
        let owner = LeaseOwner()
        let first = try #require(try store.claimOne(for: owner))
        try store.settleOnly(for: owner, [Settle.fenced(first, .transferFailed, error: ("io", "disk full"))])
        try store.apply(.resumeRequested, to: id)

        let second = try #require(try store.claimOne(for: owner))

        #expect(second.id == id)
        #expect(second.attempts == 2)
        #expect(second.leaseEpoch == first.leaseEpoch + 1)
        #expect(second.lastError == nil)
        #expect(second.errorCategory == nil)
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
        let first = try #require(try store.claimOne(for: owner, rules: rules))
        let second = try #require(try harness.open().claimOne(for: LeaseOwner(), rules: rules))
        #expect([first.id, second.id] == [ids[0], ids[2]])
        #expect(try store.claimOne(for: owner, rules: rules) == nil)
        #expect(try store.claimOne(for: owner, settling: [Settle.completed(first, path: "/x")], rules: rules)?.id == ids[1])
        // Without the rule nothing holds a claim back.
        let third = try #require(try store.add([harness.download("a3", host: "a.example")]).first)
        #expect(try store.claimOne(for: owner)?.id == third)
    }

    @Test(
        "GIVEN a limit of two per host and four workers claiming at once WHEN none settles THEN exactly two items of each host run",
        arguments: StoreKind.allCases)
    func perHostLimitHoldsUnderConcurrentClaims(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let ids = try harness.open().add((0..<12).flatMap { [harness.download("a\($0)", host: "a.example"), harness.download("b\($0)", host: "b.example")] })
        let stores = try (0..<4).map { _ in try harness.open() }
        let claims = ClaimLog()
        let failures = ClaimLog()
        DispatchQueue.concurrentPerform(iterations: 4) { index in
            let owner = LeaseOwner()
            do {
                while let item = try stores[index].claimOne(for: owner, rules: ClaimRules(maxPerHost: 2)) { claims.append(item.id) }
            } catch {
                failures.append(Int64(index))
            }
        }

        #expect(failures.all().isEmpty)
        let items = try harness.open().all()
        let running = items.filter { $0.state == .running }
        #expect(claims.sorted() == running.map(\.id))
        #expect(running.filter { $0.url.contains("a.example") }.count == 2)
        #expect(running.filter { $0.url.contains("b.example") }.count == 2)
        #expect(items.count == ids.count)
    }

    @Test(
        "GIVEN a limit of one per host and the host's item pausing WHEN claiming THEN its next item waits until the transfer stopped",
        arguments: StoreKind.allCases)
    func perHostLimitCountsTransfersBeingStopped(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let ids = try store.add([harness.download("a1", host: "a.example"), harness.download("a2", host: "a.example")])
        let owner = LeaseOwner()
        let rules = ClaimRules(maxPerHost: 1)
        let first = try #require(try store.claimOne(for: owner, rules: rules))
        try store.apply(.pauseRequested, to: first.id)

        #expect(try store.claimOne(for: owner, rules: rules) == nil, "a pausing item still holds its host's slot")
        #expect(try store.claimOne(for: owner, settling: [Settle.fenced(first, .transferPaused)], rules: rules)?.id == ids[1])
        #expect(try store.item(ids[0])?.state == .paused)
    }

    @Test(
        "GIVEN a limit of one per host and URLs that spell one host in other cases WHEN claiming THEN they count as one host",
        arguments: StoreKind.allCases)
    func perHostLimitIgnoresTheHostsCase(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let ids = try store.add([harness.download("a1", host: "A.Example"), harness.download("a2", host: "a.example")])
        let rules = ClaimRules(maxPerHost: 1)

        let first = try store.claimOne(for: LeaseOwner(), rules: rules)
        let second = try harness.open().claimOne(for: LeaseOwner(), rules: rules)

        #expect(first?.id == ids[0])
        #expect(second == nil)
        #expect(try store.item(ids[1])?.state == .queued)
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
        let first = try #require(try store.claimOne(for: LeaseOwner(), rules: rules))
        #expect(first.id == ids[0])
        #expect(try store.claimOne(for: LeaseOwner(), rules: rules)?.id == ids[20])
    }

    @Test(
        "GIVEN settlements of an unknown item, of an item never claimed and of an illegal step WHEN they ride on a claim THEN each is skipped and the claim goes on",
        arguments: StoreKind.allCases)
    func settlementsThatCannotApplyAreSkipped(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let ids = try store.add([harness.download("a"), harness.download("b", priority: -1)])
        let owner = LeaseOwner()
        let settlements = [
            Settle.unfenced(ids[0] + 100, .transferCompleted, finished: (1, "/x")),
            Settle.unfenced(ids[1], .transferFailed, error: ("io", "never ran")),
            Settle.unfenced(ids[0], .transferPaused),
        ]

        let claimed = try store.claimOne(for: owner, settling: settlements)

        #expect(claimed?.id == ids[0])
        #expect(claimed?.state == .running)
        #expect(try store.item(ids[1])?.state == .queued)
        #expect(try store.item(ids[1])?.lastError == nil)
    }

    @Test("GIVEN an item put back with retryAfter WHEN claimed at once THEN nothing; after the delay THEN it is claimed", arguments: StoreKind.allCases)
    func putBack(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let id = try #require(try store.add([harness.download("a")]).first)
        let owner = LeaseOwner()
        let item = try #require(try store.claimOne(for: owner))
        #expect(try store.claimOne(for: owner, settling: [Settle.fenced(item, .ownerLost, retryAfter: 1)]) == nil)
        #expect(try store.item(id)?.state == .queued)
        #expect(try store.hasPendingWork(among: [id]))
        Thread.sleep(forTimeInterval: 1.2)
        #expect(try store.claimOne(for: owner)?.id == id)
    }

    @Test("GIVEN a worker waiting for work WHEN wakeWaiters is called THEN its wait ends long before its deadline", arguments: StoreKind.allCases)
    func wakeWaitersEndsAWait(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        // A first wait starts what wakes it on its own (PostgreSQL: the LISTEN connection, whose start wakes every waiter).
        store.waitForWork(seconds: 0.5)
        let waking = Thread {
            Thread.sleep(forTimeInterval: 0.3)
            store.wakeWaiters()
        }
        let started = Date()
        waking.start()

        store.waitForWork(seconds: 10)

        let waited = Date().timeIntervalSince(started)
        #expect(waited < 5, "woke after \(waited) s")
    }
}
