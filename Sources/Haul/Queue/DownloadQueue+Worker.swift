import HaulStore
import Synchronization

extension DownloadQueue {
    /// How many downloads of a whole run may wait to be put in place at once, shared out among its
    /// workers: each keeps its task, open file and events alive until its group is done.
    static let finishingInRun = 32

    /// Downloads of one worker whose files are still being put in place, at most: past this the
    /// worker waits for one before it claims again. Four each for up to eight workers, so a
    /// group's syncs overlap the next transfers; fewer each beyond, down to one, so that a run of
    /// 64 holds 64, not 256 (peak RSS 57 -> 51 MiB, measured).
    static func finishingPerWorker(workers: Int) -> Int {
        min(4, max(1, finishingInRun / max(1, workers)))
    }

    /// One worker: claim, download, note the outcome, repeat. Each outcome reaches the store in
    /// the same transaction as a later claim: one commit per download. A download whose transfer
    /// is over hands the worker on (`ItemHandoff`) while its file is put in place with a group
    /// (`FinishGroups`), so the group's syncs and commits overlap the next transfer; its outcome
    /// joins the worker's next claim when the group is done. A settlement that took secrets out
    /// is followed by a truncation of the write-ahead log (at most one a second, none for
    /// downloads that had no secret), so their copies do not wait for the end of the run. In a
    /// long-running run (`options.concurrency`), a worker beyond the limit, or one that found
    /// nothing, waits. Returns once its downloads have all ended and their outcomes are handed over.
    func work(_ index: Int, of workers: Int, _ options: QueueRunOptions, _ ids: Set<Int64>?, _ run: RunState, _ rules: ClaimRules, _ finishGroups: FinishGroups)
        async
    {
        let outcomes = Outcomes()
        var pending: [QueueSettlement] = []
        let finishingLimit = Self.finishingPerWorker(workers: workers)
        await withTaskGroup(of: Void.self) { items in
            var running = 0
            claiming: while true {
                pending += outcomes.take()
                let draining = self.running.isDraining
                let wakeUps = options.concurrency?.wakeUps
                if let concurrency = options.concurrency, !draining, index >= concurrency.limit {
                    if !pending.isEmpty { pending = await BlockingWork.run { [pending] in settleOnly(pending) } }
                    await concurrency.idle(seconds: 2)
                    continue
                }
                while running > finishingLimit, await items.next() != nil { running -= 1 }
                let claimed: StoredDownload?
                do throws(StoreError) {
                    let settling = pending
                    claimed = try await BlockingWork.storeCall { () throws(StoreError) -> StoredDownload? in
                        progressWrites.flush(settling.map(\.id))
                        let next = try store.claimNext(for: owner, among: draining ? [] : ids, settling: settling, rules: rules)
                        letGo(settling)
                        if !settling.isEmpty { store.forgetRemovedSecretsSoon() }
                        return next
                    }
                    pending = []
                } catch {
                    // A store locked by another process, or a database server away for longer than
                    // its reconnection backoff (which waited already), is tried again; anything
                    // else ends this worker.
                    if error.kind == .locked || (error.kind == .unavailable && !draining) { continue }
                    break claiming
                }
                guard let item = claimed else {
                    if draining { break claiming }
                    if running > 0 {
                        // Nothing claimable may only mean held back by this worker's own downloads
                        // still being put in place (a host at its limit until they settle): the
                        // next of them to end is settled with the next claim.
                        if await items.next() != nil { running -= 1 }
                        continue
                    }
                    if store.isShared {
                        // Wake on a NOTIFY (an item queued anywhere), or in time to take over an expired lease.
                        let store = self.store
                        let keepsWaiting = await BlockingWork.onThread(name: "haul-wait-for-work") { () -> Bool in
                            guard options.concurrency != nil || (try? store.hasPendingWork(among: ids)) != false else { return false }
                            store.waitForWork(seconds: min(2, store.leaseSeconds / 2))
                            return true
                        }
                        if !keepsWaiting { break claiming }
                        continue
                    }
                    // Nothing to claim: wait for an item added here (a wake-up) or by another
                    // process. A batch (no long-running concurrency) ends here.
                    guard let concurrency = options.concurrency else { break claiming }
                    await concurrency.idle(seconds: 2, since: wakeUps)
                    continue
                }
                leases.claimed(item.id, epoch: item.leaseEpoch)
                let handoff = ItemHandoff()
                running += 1
                items.addTask {
                    let ending = await self.runItem(item, options, finishGroups, handoff)
                    await self.keepLastFigures(of: ending, item)
                    outcomes.add(self.settle(ending, of: item, run))
                    handoff.release()
                    // A worker waiting for work hears of it at once.
                    options.concurrency?.wake()
                }
                await handoff.wait()
            }
            await items.waitForAll()
        }
        pending += outcomes.take()
        if !pending.isEmpty { _ = await BlockingWork.run { [pending] in settleOnly(pending) } }
    }

    /// Hands settlements to the store without claiming (a worker about to wait or to end);
    /// returns those still to hand over.
    func settleOnly(_ pending: [QueueSettlement]) -> [QueueSettlement] {
        progressWrites.flush(pending.map(\.id))
        do {
            _ = try store.claimNext(for: owner, among: [], settling: pending)
            // Let go at once: a heartbeat meanwhile must not take them for lost leases.
            letGo(pending)
            store.forgetRemovedSecretsSoon()
            return []
        } catch {
            // Kept for the next claim.
            return pending
        }
    }
}

extension DownloadQueue {
    /// Settles the completion of a finish group's queue items in one commit, right after their
    /// files were put in place (on the pool, before their runners hear so). Their settlement that
    /// rides on the worker's next claim then finds them completed and is skipped. A store that
    /// cannot be reached leaves that one to do it.
    func settleCompleted(_ placed: [FinishGroups.Placed]) {
        let settlements = placed.compactMap { item -> QueueSettlement? in
            guard let epoch = leases.writableEpoch(item.item) else { return nil }
            return QueueSettlement(id: item.item, input: .transferCompleted, finished: (item.bytes, item.path), epoch: epoch)
        }
        guard !settlements.isEmpty else { return }
        _ = settleOnly(settlements)
    }

    /// `settled` reached the store: their leases are no longer this process's to renew.
    func letGo(_ settled: [QueueSettlement]) {
        leases.letGo(settled.map { (id: $0.id, epoch: $0.epoch) })
    }
}

/// The outcomes of a worker's downloads that ended after it moved on, until its next claim.
private final class Outcomes: Sendable {
    private let list = Mutex<[QueueSettlement]>([])

    func add(_ settlement: QueueSettlement) {
        list.withLock { $0.append(settlement) }
    }

    func take() -> [QueueSettlement] {
        list.withLock { list in
            defer { list = [] }
            return list
        }
    }
}
