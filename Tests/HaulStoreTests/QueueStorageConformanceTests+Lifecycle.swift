import Foundation
import HaulCore
import HaulStore
import HaulTestSupport
import Testing

// The lifecycle through `apply`, and removal: the same on both stores.
extension QueueStorageConformanceTests {
    @Test("GIVEN a claimed item WHEN pause, checkpoint, resume are applied THEN each state and action follows the lifecycle", arguments: StoreKind.allCases)
    func followsLifecycle(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let id = try #require(try store.add([harness.download("a")]).first)
        let claimed = try #require(try store.claimOne(for: LeaseOwner()))
        #expect(claimed.id == id)
        #expect(claimed.state == .running)

        let (pausing, stop) = try store.apply(.pauseRequested, to: id)
        #expect(pausing.state == .pausing)
        #expect(stop == .stopTransfer)
        #expect(try store.item(id)?.state == .pausing)
        #expect(try harness.lease(of: id).owner != nil)  // still held until the transfer stops

        let (paused, none) = try store.apply(.transferPaused, to: id)
        #expect(paused.state == .paused)
        #expect(none == .none)
        #expect(try harness.lease(of: id).owner == nil)

        let (queued, _) = try store.apply(.resumeRequested, to: id)
        #expect(queued.state == .queued)
        #expect(try store.item(id)?.state == .queued)
    }

    @Test(
        "GIVEN a claimed item WHEN a cancel is requested and its transfer stops THEN cancelling (stop the transfer), then cancelled with its lease released",
        arguments: StoreKind.allCases)
    func followsCancellation(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let id = try #require(try store.add([harness.download("a")]).first)
        _ = try #require(try store.claimOne(for: LeaseOwner()))

        let (cancelling, stop) = try store.apply(.cancelRequested, to: id)
        #expect(cancelling.state == .cancelling)
        #expect(stop == .stopTransfer)
        #expect(try harness.lease(of: id).owner != nil)

        let (cancelled, _) = try store.apply(.transferCancelled, to: id)
        #expect(cancelled.state == .cancelled)
        #expect(try store.item(id)?.state == .cancelled)
        #expect(try harness.lease(of: id).owner == nil)
        #expect(try harness.lease(of: id).expires == nil)
    }

    @Test("GIVEN a running item WHEN it fails with an error and is resumed THEN the error is stored, then cleared", arguments: StoreKind.allCases)
    func storesAndClearsError(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let id = try #require(try store.add([harness.download("a")]).first)
        _ = try store.claimOne(for: LeaseOwner())

        let (failed, _) = try store.apply(.transferFailed, to: id, error: (category: "http", message: "404 Not Found"))

        #expect(failed.state == .failed)
        #expect(try store.item(id)?.lastError == "404 Not Found")
        #expect(try store.item(id)?.errorCategory == "http")
        #expect(try harness.lease(of: id).owner == nil)

        try store.apply(.resumeRequested, to: id)
        #expect(try store.item(id)?.state == .queued)
        #expect(try store.item(id)?.lastError == nil)
        #expect(try store.item(id)?.errorCategory == nil)
    }

    /// Each illegal step `refusesIllegalTransition` tries: the state the item is driven to, and the input.
    static let illegalSteps: [(DownloadState, LifecycleInput)] = [
        (.queued, .transferCompleted),
        (.queued, .transferPaused),
        (.paused, .start),
        (.paused, .transferCompleted),
        (.completed, .start),
        (.completed, .resumeRequested),
        (.cancelled, .resumeRequested),
        (.failed, .pauseRequested),
    ]

    @Test(
        "GIVEN an item in some state WHEN an illegal input is applied THEN .conflict and the stored state is unchanged",
        arguments: StoreKind.allCases, illegalSteps.indices)
    func refusesIllegalTransition(_ kind: StoreKind, step: Int) throws {
        let (state, input) = Self.illegalSteps[step]
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let id = try #require(try store.add([harness.download("a")]).first)
        // Drive the item to `state` through legal steps.
        switch state {
        case .queued: break
        case .paused: try store.apply(.pauseRequested, to: id)
        case .cancelled: try store.apply(.cancelRequested, to: id)
        case .completed:
            _ = try store.claimOne(for: LeaseOwner())
            try store.apply(.transferCompleted, to: id)
        case .failed:
            _ = try store.claimOne(for: LeaseOwner())
            try store.apply(.transferFailed, to: id, error: (category: "io", message: "disk"))
        default: Issue.record("no path to \(state) in this test")
        }
        let before = try #require(try store.item(id))
        #expect(before.state == state)

        let refusal = storeErrorKind { try store.apply(input, to: id) }

        #expect(refusal == .conflict, "\(input) on \(state)")
        #expect(try store.item(id) == before)
    }

    @Test("GIVEN no such item WHEN apply or remove is called THEN .notFound", arguments: StoreKind.allCases)
    func unknownItemIsNotFound(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()

        #expect(storeErrorKind { try store.apply(.start, to: 42) } == .notFound)
        #expect(storeErrorKind { try store.apply(.cancelRequested, to: 42) } == .notFound)
        #expect(storeErrorKind { try store.remove(42) } == .notFound)
        #expect(try store.item(42) == nil)
    }

    @Test("GIVEN a running item WHEN remove is called THEN .conflict; once cancelled it is removed", arguments: StoreKind.allCases)
    func removeRefusesRunningItem(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let id = try #require(try store.add([harness.download("a")]).first)
        _ = try store.claimOne(for: LeaseOwner())

        #expect(storeErrorKind { try store.remove(id) } == .conflict)
        #expect(try store.item(id)?.state == .running)

        try store.apply(.cancelRequested, to: id)
        #expect(storeErrorKind { try store.remove(id) } == .conflict, "a cancelling item still has a transfer to stop")
        try store.apply(.transferCancelled, to: id)
        try store.remove(id)
        #expect(try store.item(id) == nil)
    }

    @Test(
        "GIVEN a queued, a paused, a failed and a completed item WHEN each is removed THEN each is gone, and its destination takes a new download",
        arguments: StoreKind.allCases)
    func removeTakesSettledAndQueuedItems(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let ids = try store.add([harness.download("queued"), harness.download("paused", paused: true), harness.download("failed"), harness.download("done")])
        let owner = LeaseOwner()
        let failed = try #require(try store.claimOne(for: owner, among: [ids[2]]))
        let done = try #require(try store.claimOne(for: owner, among: [ids[3]]))
        try store.settleOnly(for: owner, [Settle.fenced(failed, .transferFailed, error: ("io", "disk")), Settle.completed(done)])

        for id in ids { try store.remove(id) }

        #expect(try store.all().isEmpty)
        #expect(try !store.hasPendingWork(among: nil))
        #expect(try store.add([harness.download("queued"), harness.download("paused")]).count == 2)
        #expect(storeErrorKind { try store.remove(ids[0]) } == .notFound)
    }

    @Test(
        "GIVEN a queued item WHEN something tries apply(.start) THEN it is refused: only a claim, which takes a lease, starts an item",
        arguments: StoreKind.allCases)
    func startOnlyByClaiming(_ kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let id = try #require(try store.add([harness.download("a")]).first)

        #expect(storeErrorKind { _ = try store.apply(.start, to: id) } == .conflict)

        #expect(try store.item(id)?.state == .queued)
        #expect(try harness.lease(of: id).owner == nil)
        let claimed = try store.claimOne(for: LeaseOwner())
        #expect(claimed?.id == id)
        #expect(claimed?.attempts == 1)
        // AND another process cannot take the running, leased item
        #expect(try harness.open().claimOne(for: LeaseOwner()) == nil)
    }
}
