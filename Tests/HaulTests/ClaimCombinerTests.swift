import Foundation
import HaulCore
import HaulTestSupport
import Synchronization
import Testing

@testable import Haul
@testable import HaulStore

/// A run's claims made together (`ClaimCombiner`), on a real SQLite store, no network.
@Suite("ClaimCombiner: a run's workers claim together")
struct ClaimCombinerTests {
    /// A SQLite store in a fresh directory with `count` queued items, and a combiner over it.
    static func combiner(items count: Int, batch: Int = 1, leases: HeldLeases = HeldLeases()) throws -> (TemporaryDirectory, QueueStore, [Int64], ClaimCombiner)
    {
        let directory = try TemporaryDirectory(prefix: "haul-combiner")
        let store = try QueueStore(directory: directory.path, leaseSeconds: 20)
        let ids = try store.add((0..<count).map { NewDownload(url: "http://127.0.0.1:1/f\($0)", destinationKind: .file, destination: "/tmp/haul-c-\($0)") })
        let settler = QueueSettler(store: store, owner: LeaseOwner(), progressWrites: ProgressWrites(store: store), leases: leases)
        return (directory, store, ids, ClaimCombiner(settler: settler, ids: nil, rules: ClaimRules(), batch: batch))
    }

    /// How many claim transactions leased rows of the store in `directory` (each leaves its token).
    static func claimTransactions(_ directory: TemporaryDirectory) throws -> Int64 {
        let tokens = try SQLiteConnection(path: directory.file(QueueStore.fileName)).query("SELECT count(DISTINCT claim_token) FROM downloads")
        return try #require(tokens.first?[0].int64)
    }

    @Test(
        "GIVEN 20 items and a combiner claiming 8 at a time WHEN one worker claims and settles until none is left THEN it gets every item best first, each once, from 3 claim transactions"
    )
    func aBatchIsClaimedAhead() throws {
        let leases = HeldLeases()
        let (directory, store, ids, combiner) = try Self.combiner(items: 20, batch: 8, leases: leases)
        var got: [Int64] = []
        while let item = try combiner.settleAndClaim(settling: [], draining: false) {
            got.append(item.id)
            // Held from its claim on, whether taken now or later: the heartbeat renews it.
            #expect(leases.writable(item.id) == item.lease)
        }
        #expect(got == ids)
        #expect(try Self.claimTransactions(directory) == 3)
        #expect(try store.all().allSatisfy { $0.state == .running && $0.attempts == 1 })
    }

    @Test(
        "GIVEN a combiner claiming 8 at a time that handed out one item WHEN a worker asks while draining THEN the 7 held ahead are back in the queue, unleased, no longer held, and the one handed out keeps its lease"
    )
    func aDrainHandsHeldItemsBack() throws {
        let leases = HeldLeases()
        let (directory, store, _, combiner) = try Self.combiner(items: 10, batch: 8, leases: leases)
        defer { withExtendedLifetime(directory) {} }
        let first = try #require(try combiner.settleAndClaim(settling: [], draining: false))
        #expect(leases.held.count == 8)
        #expect(try combiner.settleAndClaim(settling: [], draining: true) == nil)
        let items = try store.all()
        #expect(items.filter { $0.state == .queued && $0.leaseOwner == nil }.count == 9)
        #expect(items.first { $0.id == first.id }?.state == .running)
        #expect(Set(leases.held.keys) == [first.id])
        // Claimed again later, as any queued item.
        #expect(try store.claim(9, for: LeaseOwner(), among: nil, settling: [], rules: ClaimRules()).count == 9)
    }

    @Test("GIVEN a combiner claiming 8 at a time that handed out one item WHEN the run ends (releaseAhead) THEN the 7 held ahead are back in the queue")
    func theRunsEndHandsHeldItemsBack() throws {
        let leases = HeldLeases()
        let (directory, store, _, combiner) = try Self.combiner(items: 8, batch: 8, leases: leases)
        defer { withExtendedLifetime(directory) {} }
        _ = try #require(try combiner.settleAndClaim(settling: [], draining: false))
        combiner.releaseAhead()
        #expect(try store.all().filter { $0.state == .queued && $0.leaseOwner == nil }.count == 7)
        #expect(leases.held.count == 1)
    }

    @Test(
        "GIVEN a combiner claiming 4 at a time that handed out one item WHEN the lease of one held ahead is lost (taken over elsewhere) THEN no worker is given that item, and it is no longer held"
    )
    func aLostHeldItemIsPassedOver() throws {
        let leases = HeldLeases()
        let (directory, _, ids, combiner) = try Self.combiner(items: 4, batch: 4, leases: leases)
        defer { withExtendedLifetime(directory) {} }
        let first = try #require(try combiner.settleAndClaim(settling: [], draining: false))
        #expect(first.id == ids[0])
        leases.lose(ids[1])
        var rest: [Int64] = []
        while let item = try combiner.settleAndClaim(settling: [], draining: false) { rest.append(item.id) }
        #expect(rest == [ids[2], ids[3]])
        #expect(leases.writable(ids[1]) == nil && leases.held[ids[1]] == nil)
    }

    @Test(
        "GIVEN 300 items and eight workers asking at once WHEN they claim and settle until none is left THEN each item is claimed by one worker and completed once, with fewer transactions than items"
    )
    func eightWorkersShareTransactions() throws {
        let (directory, store, ids, combiner) = try Self.combiner(items: 300)
        let claimed = Mutex<[Int64]>([])
        let failures = Mutex<[String]>([])
        // Eight threads of their own (concurrentPerform would run as many as there are cores).
        let done = DispatchGroup()
        for _ in 0..<8 {
            done.enter()
            Thread {
                defer { done.leave() }
                var pending: [QueueSettlement] = []
                do {
                    while let item = try combiner.settleAndClaim(settling: pending, draining: false) {
                        claimed.withLock { $0.append(item.id) }
                        pending = [QueueSettlement(id: item.id, input: .transferCompleted, finished: (1, "/x"), lease: item.lease)]
                    }
                    _ = try combiner.settleAndClaim(settling: pending, draining: true)
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }.start()
        }
        done.wait()
        #expect(failures.withLock { $0 }.isEmpty)
        #expect(claimed.withLock { $0 }.sorted() == ids)
        #expect(try store.all().allSatisfy { $0.state == .completed && $0.attempts == 1 })
        // Rows leased in one transaction share its claim token.
        let tokens = try SQLiteConnection(path: directory.file(QueueStore.fileName)).query("SELECT count(DISTINCT claim_token) FROM downloads")
        let transactions = try #require(tokens.first?[0].int64)
        #expect(transactions < 200, "\(transactions) claim transactions for 300 items")
    }

    @Test("GIVEN three items and a worker that drains WHEN it asks with its settlements THEN they are settled and it gets no item")
    func aDrainingRequestClaimsNothing() throws {
        let (directory, store, ids, combiner) = try Self.combiner(items: 3)
        defer { withExtendedLifetime(directory) {} }
        let first = try #require(try combiner.settleAndClaim(settling: [], draining: false))
        let settling = [QueueSettlement(id: first.id, input: .transferCompleted, finished: (1, "/x"), lease: first.lease)]
        #expect(try combiner.settleAndClaim(settling: settling, draining: true) == nil)
        #expect(try store.item(first.id)?.state == .completed)
        #expect(try store.all().filter { $0.state == .queued }.count == ids.count - 1)
    }

    @Test(
        "GIVEN 400 items and 64 worker threads WHEN another process holds the store's lock past the busy timeout while they all wait to claim THEN every waiting worker hears locked, tries again, and each item is claimed by one worker and completed once"
    )
    func sixtyFourWorkersSurviveALockedTurn() throws {
        let directory = try TemporaryDirectory(prefix: "haul-combiner")
        let store = try QueueStore(directory: directory.path, leaseSeconds: 60)
        let ids = try store.add((0..<400).map { NewDownload(url: "http://127.0.0.1:1/l\($0)", destinationKind: .file, destination: "/tmp/haul-l-\($0)") })
        let settler = QueueSettler(store: store, owner: LeaseOwner(), progressWrites: ProgressWrites(store: store), leases: HeldLeases())
        let combiner = ClaimCombiner(settler: settler, ids: nil, rules: ClaimRules())
        let other = try SQLiteConnection(path: directory.file(QueueStore.fileName))
        try other.execute("BEGIN IMMEDIATE")
        let claimed = Mutex<[Int64]>([])
        let failures = Mutex<[String]>([])
        let lockedAnswers = Atomic<Int>(0)
        let done = DispatchGroup()
        for _ in 0..<64 {
            done.enter()
            let thread = Thread {
                defer { done.leave() }
                var pending: [QueueSettlement] = []
                var draining = false
                while true {
                    do throws(StoreError) {
                        guard let item = try combiner.settleAndClaim(settling: pending, draining: draining) else {
                            if draining { return }
                            draining = true
                            continue
                        }
                        pending = [QueueSettlement(id: item.id, input: .transferCompleted, finished: (1, "/x"), lease: item.lease)]
                        claimed.withLock { $0.append(item.id) }
                    } catch  where error.kind == .locked {
                        lockedAnswers.add(1, ordering: .relaxed)
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                        return
                    }
                }
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        // Held past the 5 s busy timeout: the turn under way fails for every worker in it.
        Thread.sleep(forTimeInterval: 5.6)
        try other.execute("ROLLBACK")
        #expect(done.wait(timeout: .now() + 60) == .success, "the workers did not all end")
        #expect(failures.withLock { $0 }.isEmpty)
        #expect(lockedAnswers.load(ordering: .relaxed) > 0, "no turn met the lock")
        #expect(claimed.withLock { $0 }.sorted() == ids)
        #expect(try store.all().allSatisfy { $0.state == .completed && $0.attempts == 1 })
    }
}
