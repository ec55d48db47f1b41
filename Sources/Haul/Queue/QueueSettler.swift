import HaulStore

/// Hands the outcomes of this process's downloads to the store, always in one order: their last
/// progress figures first (so a settled row never gets older figures after), then the settlement
/// (with the worker's next claim, or alone), then their leases let go (`HeldLeases`: once the
/// store has them, a heartbeat must neither renew them nor take them for lost), then the
/// secrets the settlement removed are forgotten soon. Runs where it may block (`BlockingWork`).
final class QueueSettler: Sendable {
    private let store: any QueueStorage
    private let owner: LeaseOwner
    private let progressWrites: ProgressWrites
    private let leases: HeldLeases

    init(store: any QueueStorage, owner: LeaseOwner, progressWrites: ProgressWrites, leases: HeldLeases) {
        self.store = store
        self.owner = owner
        self.progressWrites = progressWrites
        self.leases = leases
    }

    /// Settles `settling` and claims the next `count` items (among `ids`; none with `[]`) in one
    /// commit (`ClaimCombiner` gathers the requests of a run's workers into one).
    func settleAndClaim(_ count: Int, among ids: Set<Int64>?, settling: [QueueSettlement], rules: ClaimRules) throws(StoreError)
        -> [StoredDownload]
    {
        progressWrites.flush(settling.map(\.id))
        let settled = settling.compactMap(\.lease)
        leases.settling(settled)
        let next: [StoredDownload]
        do {
            next = try store.claim(count, for: owner, among: ids, settling: settling, rules: rules)
        } catch {
            leases.settlingFailed(settled)
            throw error
        }
        // Held from now on (renewed by the heartbeat), whether a worker runs it now or later.
        for item in next { leases.claimed(item.lease(for: owner)) }
        letGo(settling)
        if !settling.isEmpty { store.forgetRemovedSecretsSoon() }
        return next
    }

    /// Hands settlements to the store without claiming (a worker about to wait or to end);
    /// returns those still to hand over.
    func settleOnly(_ pending: [QueueSettlement]) -> [QueueSettlement] {
        progressWrites.flush(pending.map(\.id))
        let settled = pending.compactMap(\.lease)
        leases.settling(settled)
        do {
            _ = try store.claimNext(for: owner, among: [], settling: pending)
            // Let go at once: a heartbeat meanwhile must not take them for lost leases.
            letGo(pending)
            store.forgetRemovedSecretsSoon()
            return []
        } catch {
            // Kept for the next claim.
            leases.settlingFailed(settled)
            return pending
        }
    }

    /// Settles the completion of a finish group's queue items in one commit, right after their
    /// files were put in place (on the pool, before their runners hear so). Their settlement that
    /// rides on the worker's next claim then finds them completed and is skipped. A store that
    /// cannot be reached leaves that one to do it. (An item whose lease is lost or let go is left
    /// out: its settlement is not this process's to make.)
    func settleCompleted(_ placed: [FinishGroups.Placed]) {
        let settlements = placed.compactMap { item -> QueueSettlement? in
            guard let lease = leases.writable(item.item) else { return nil }
            return QueueSettlement(id: item.item, input: .transferCompleted, finished: (item.bytes, item.path), lease: lease)
        }
        guard !settlements.isEmpty else { return }
        _ = settleOnly(settlements)
    }

    /// Whether the lease of `item`, claimed ahead and not started, was lost meanwhile: then it is
    /// let go (nothing of it is this process's to write or renew).
    func dropIfLost(_ item: StoredDownload) -> Bool {
        let lease = item.lease(for: owner)
        guard leases.takeLost(item.id) || leases.writable(item.id) != lease else { return false }
        leases.letGo([lease])
        return true
    }

    /// `settled` reached the store: their leases are no longer this process's to renew.
    private func letGo(_ settled: [QueueSettlement]) {
        leases.letGo(settled.compactMap(\.lease))
    }
}
