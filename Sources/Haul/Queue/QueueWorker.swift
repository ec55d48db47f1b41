import Foundation
import HaulCore
import HaulEngine
import HaulStore
import Synchronization

/// One worker of a queue run: claims an item, runs it, notes its outcome, and claims again. What
/// it keeps between claims (the outcomes still to hand to the store, the downloads still being
/// put in place) is its own; what lives beyond it is the queue's owners'.
struct QueueWorker: Sendable {
    let queue: DownloadQueue
    /// Which worker of how many: those past a long-running run's limit wait.
    let index: Int
    let workers: Int
    let run: RunState

    /// How many downloads of a whole run may wait to be put in place at once, shared out among its
    /// workers: each keeps its task, open file and events alive until its group is done.
    static let finishingInRun = 32

    /// How long a batch's worker with nothing to claim waits before it looks again, while other
    /// workers' items of the batch still run: a claim attempt and a count five times a second.
    static let batchWaitStep = 0.2

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
    func work() async {
        let options = run.options
        let ids = run.ids
        let outcomes = Outcomes()
        var pending: [QueueSettlement] = []
        let finishingLimit = Self.finishingPerWorker(workers: workers)
        await withTaskGroup(of: Void.self) { items in
            var running = 0
            claiming: while true {
                pending += outcomes.take()
                let draining = queue.running.isDraining
                let wakeUps = options.concurrency?.wakeUps
                if let concurrency = options.concurrency, !draining, index >= concurrency.limit {
                    if !pending.isEmpty { pending = await BlockingWork.run { [pending] in queue.settler.settleOnly(pending) } }
                    await concurrency.idle(seconds: 2)
                    continue
                }
                while running > finishingLimit, await items.next() != nil { running -= 1 }
                var claimed: StoredDownload?
                do throws(StoreError) {
                    // An item claimed ahead needs no transaction, and no trip to the pool.
                    if pending.isEmpty, !draining { claimed = run.claims.nextHeldAhead() }
                    if claimed == nil {
                        let settling = pending
                        let claims = run.claims
                        claimed = try await BlockingWork.storeCall { () throws(StoreError) -> StoredDownload? in
                            try claims.settleAndClaim(settling: settling, draining: draining)
                        }
                        pending = []
                    }
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
                    if queue.store.isShared {
                        // Wake on a NOTIFY (an item queued anywhere), or in time to take over an
                        // expired lease. A batch waits for other workers' last items in short
                        // steps (their settlements notify no one), so it ends as soon as they are
                        // settled: a two-second step kept every worker of a drained fleet 2 s longer.
                        let store = queue.store
                        let step = options.concurrency == nil ? Self.batchWaitStep : 2
                        let keepsWaiting = await BlockingWork.onThread(name: "haul-wait-for-work") { () -> Bool in
                            guard options.concurrency != nil || (try? store.hasPendingWork(among: ids)) != false else { return false }
                            store.waitForWork(seconds: min(step, store.leaseSeconds / 2))
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
                let handoff = ItemHandoff()
                running += 1
                items.addTask {
                    let ending = await self.runItem(item, handoff)
                    await self.keepLastFigures(of: ending, item)
                    outcomes.add(self.settle(ending, of: item))
                    handoff.release()
                    // A worker waiting for work hears of it at once.
                    options.concurrency?.wake()
                }
                await handoff.wait()
            }
            await items.waitForAll()
        }
        pending += outcomes.take()
        if !pending.isEmpty { _ = await BlockingWork.run { [pending] in queue.settler.settleOnly(pending) } }
    }

    /// Runs one claimed item to its end; `handoff` is released once it no longer transfers.
    private func runItem(_ item: StoredDownload, _ handoff: ItemHandoff) async -> DownloadRunner.Ending {
        let control = RunControl()
        let hub = queue.hub(for: item.id, fresh: true)
        // Spans two owners, one at a time: the board counts it before its control can be found,
        // and nothing reads both together (a pause finds it by its control alone).
        queue.board.started(item.id)
        // Leased by a claim asked for before the run began to drain: not started, its settlement
        // (a pause while draining) hands it back to the queue.
        guard queue.running.started(item.id, control) else { return .paused }
        // Paused or cancelled by another process while it was held ahead: it ends so before
        // anything is asked or written.
        switch queue.leases.takeRequested(item.id) {
        case .pause?:
            hub.publish(.paused(DownloadProgress(bytes: item.bytes, totalBytes: item.totalBytes, bytesPerSecond: 0, secondsLeft: nil)))
            return .paused
        case .cancel?, .cancelAndDelete?:
            hub.publish(.cancelled)
            return .cancelled
        case .none?, nil: break
        }
        defer { queue.running.ended(item.id) }
        // A move of this process holding its files: waited for, not failed on (see `MovesUnderWay`).
        let moves = queue.moves
        if moves.holds(item.id) { await BlockingWork.run { moves.waitUntilNone(item.id, seconds: 5) } }
        if item.moveIntent != nil {
            // A move of it was cut short (its partial has a second name, which its open would
            // refuse), or is under way here: claimed meanwhile (put back in the queue by another
            // call), it waits for the move to give up its locks (the move fails, as the download
            // is running) instead of failing on them. Left as it is when another process holds
            // them still (the open decides then).
            let queue = self.queue
            await BlockingWork.run { _ = try? queue.settleLeftMove(item, waiting: true) }
        }
        var request: DownloadRequest
        do {
            request = try QueuedRequest.request(for: item, run.options)
        } catch {
            hub.publish(.failed(error))
            return .failed(error)
        }
        queue.attachLimiter(&request, id: item.id, stored: item.options, run.options)
        let store = queue.store
        let runner = DownloadRunner(
            request: request, transport: queue.transport, hub: hub, control: control,
            records: { _ in store.resumeRecord(for: item, owner: queue.owner) },
            finishGroups: run.finishGroups, item: item.id, transfersEnded: { handoff.release() })
        return await runner.run()
    }

    /// Counts the outcome at once; returns what the store must learn with the next claim (nil for
    /// a completion its finish group settled already: its lease was let go then).
    private func settle(_ ending: DownloadRunner.Ending, of item: StoredDownload) -> QueueSettlement? {
        let id = item.id
        let store = queue.store
        // Two flags of two owners, each read once: a drain or a lost lease after these reads is
        // the same as one just after the transfer ended (the store's lease check refuses the rest).
        let draining = queue.running.isDraining
        let lease = item.lease(for: queue.owner)
        let settlement: QueueSettlement
        if queue.leases.takeLost(id) {
            // Someone else's now: nothing of this transfer counts, and its settlement is refused.
            queue.board.ended(id, .lost)
            return QueueSettlement(id: id, input: .transferPaused, lease: lease)
        }
        let ended: QueueProgressBoard.Ending
        var settledByGroup = false
        switch ending {
        case .completed(let completion):
            // Settled with its finish group's other completions already (`settleCompleted`), unless
            // the store could not be reached then: its lease is still held only in that case.
            settledByGroup = queue.leases.writable(id) != lease
            settlement = .init(id: id, input: .transferCompleted, finished: (completion.bytes, completion.path), lease: lease)
            run.summary.withLock { summary in
                summary.completed.append(id)
                if completion.alreadyComplete { summary.alreadyComplete.append(id) }
            }
            ended = .completed(bytes: completion.bytes)
        case .failed(let error) where store.isShared && error.heldElsewhere:
            // A worker that lost this item's lease still holds its destination (it was stopped
            // past its lease): back to the queue, to be claimed again once that worker let go.
            settlement = .init(id: id, input: .ownerLost, lease: lease, retryAfter: min(5, store.leaseSeconds))
            ended = .stopped
        case .failed(let error):
            settlement = .init(id: id, input: .transferFailed, error: (error.category.name, error.message(naming: run.options.settingNames)), lease: lease)
            run.summary.withLock { $0.failed.append((id, error)) }
            ended = .failed
        case .cancelled:
            settlement = .init(id: id, input: .transferCancelled, lease: lease)
            run.summary.withLock { $0.cancelled.append(id) }
            ended = .stopped
        case .paused:
            // Stopping the whole run hands the item back to the queue; a pause request parks it.
            settlement = .init(id: id, input: draining ? .ownerLost : .transferPaused, lease: lease)
            run.summary.withLock { $0.paused.append(id) }
            ended = .stopped
        }
        // Its figures leave the active set and join the tally in one step of the board's; the hub
        // is kept apart (nothing reads it with the figures).
        queue.board.ended(id, ended)
        queue.subscribers.keepFinishedHub(id)
        queue.publishAggregate(force: false)
        return settledByGroup ? nil : settlement
    }

    /// A transfer that ended without completing (failed, cancelled) leaves its last figures in the
    /// store before they leave the live state: what a stopped download shows from then on (aria2
    /// keeps a removed download's completedLength and totalLength). A pause's figures are written
    /// with its event; a completion's with its settlement; a lost lease writes nothing.
    private func keepLastFigures(of ending: DownloadRunner.Ending, _ item: StoredDownload) async {
        switch ending {
        case .failed, .cancelled: break
        case .completed, .paused: return
        }
        let id = item.id
        // A lease lost after this look is caught by the store: the write names the claim's lease.
        guard !queue.leases.isLost(id), let (progress, destination) = queue.board.last(id) else { return }
        let store = queue.store
        await BlockingWork.run {
            _ = try? store.updateProgress(
                item.lease(for: queue.owner), bytes: progress.bytes, totalBytes: progress.totalBytes, bytesPerSecond: 0, finalPath: destination)
        }
    }
}

/// The outcomes of a worker's downloads that ended after it moved on, until its next claim.
private final class Outcomes: Sendable {
    private let list = Mutex<[QueueSettlement]>([])

    /// Keeps `settlement` for the next claim; nil (nothing left to settle) keeps nothing.
    func add(_ settlement: QueueSettlement?) {
        guard let settlement else { return }
        list.withLock { $0.append(settlement) }
    }

    func take() -> [QueueSettlement] {
        list.withLock { list in
            defer { list = [] }
            return list
        }
    }
}
