import Foundation
import HaulCore
import HaulEngine
import HaulStore
import Synchronization

extension DownloadQueue {
    /// Runs queued downloads, `options.maxConcurrent` at a time, until none is left to claim
    /// (`only` limits the run to some ids, as a batch does). Downloads left behind by a process that
    /// died are taken over and resume from their records. Returns when every worker is done.
    ///
    /// `maxPerHost`: at most this many downloads of one host at once — across every worker of the
    /// store when it is shared (the claim enforces it), and within this run otherwise. On a shared
    /// store a run also waits for the items other workers hold, and takes over those whose lease
    /// expires, before it ends: a fleet drains the queue.
    public func run(_ options: QueueRunOptions = QueueRunOptions(), only ids: Set<Int64>? = nil, maxPerHost: Int? = nil) async -> QueueRunSummary {
        // What the run was asked for, as stored now: its figures count what is already complete.
        let scope = ((try? storeCall { try $0.all() }) ?? []).filter { ids?.contains($0.id) ?? true }
        live.withLock { state in
            // A stop asked of a long-running run before it got here holds (a signal sent as soon
            // as `haul serve` listens).
            state.draining = options.concurrency?.isStopRequested ?? false
            state.tally = QueueTally(scope: scope)
            state.aggregate = state.tally.progress(active: [:])
        }
        let runState = RunState(settingNames: options.settingNames)
        // A group's completions are settled as soon as its files are in place, before any is
        // announced: what a `.completed` event (or a notification) says, every read already says.
        let finishGroups = FinishGroups(afterGroup: { [weak self] placed in self?.settleCompleted(placed) })
        let workers = options.concurrency?.maximum ?? max(1, options.maxConcurrent)
        live.withLock { $0.concurrency = options.concurrency }
        let leases = LeaseKeeper(queue: self)
        leases.start()
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<workers {
                // A task each, not a thread: transfers wait on the transport's event loop, store
                // calls and syncs on `BlockingWork`'s pool.
                group.addTask {
                    await self.work(index, of: workers, options, ids, runState, ClaimRules(maxPerHost: maxPerHost), finishGroups)
                }
            }
        }
        await leases.stop()
        live.withLock { $0.concurrency = nil }
        runState.summary.withLock { $0.finishGroups = finishGroups.figures }
        // Downloads that ended gave up their credentials: no copy stays in the write-ahead log.
        store.forgetRemovedSecrets()
        publishAggregate(force: true)
        endRunStreams()
        return runState.summary.withLock { $0 }
    }

    /// How many downloads a run would take on now: the queued ones and those in a transfer state
    /// (a transfer whose process died is taken over), damaged ones included (the run fails them,
    /// though `items()` already shows them failed).
    public func pendingCount() throws(DownloadError) -> Int {
        try storeCall { try $0.pendingCount() }
    }

    /// Runs one claimed item to its end; `handoff` is released once it no longer transfers.
    func runItem(_ item: StoredDownload, _ options: QueueRunOptions, _ finishGroups: FinishGroups, _ handoff: ItemHandoff) async
        -> DownloadRunner.Ending
    {
        let control = RunControl()
        let hub = hub(for: item.id, fresh: true)
        live.withLock { state in
            state.controls[item.id] = control
            state.tally.started(item.id)
            // Progress reaches the store after the first second: a small file never costs a write for it.
            state.persistedAt[item.id] = .now
        }
        defer {
            live.withLock { state in
                state.controls.removeValue(forKey: item.id)
                state.limiters.removeValue(forKey: item.id)
            }
        }
        var request: DownloadRequest
        do {
            request = try Self.request(for: item, options)
        } catch {
            hub.publish(.failed(error))
            return .failed(error)
        }
        attachLimiter(&request, id: item.id, stored: item.options, options)
        let store = self.store
        let runner = DownloadRunner(
            request: request, transport: transport, hub: hub, control: control,
            records: { _ in store.resumeRecord(for: item) },
            finishGroups: finishGroups, item: item.id, transfersEnded: { handoff.release() })
        return await runner.run()
    }

    /// Counts the outcome at once; returns what the store must learn with the next claim.
    func settle(_ ending: DownloadRunner.Ending, of item: StoredDownload, _ run: RunState) -> QueueSettlement {
        let id = item.id
        let (draining, lost) = live.withLock { state in
            (state.draining, state.lostLeases.remove(id) != nil)
        }
        let epoch = item.leaseEpoch
        let settlement: QueueSettlement
        if lost {
            // Someone else's now: nothing of this transfer counts, and its settlement is refused.
            live.withLock { $0.active(remove: id, counting: false) }
            return QueueSettlement(id: id, input: .transferPaused, epoch: epoch)
        }
        switch ending {
        case .completed(let completion):
            settlement = .init(id: id, input: .transferCompleted, finished: (completion.bytes, completion.path), epoch: epoch)
            run.summary.withLock { summary in
                summary.completed.append(id)
                if completion.alreadyComplete { summary.alreadyComplete.append(id) }
            }
            live.withLock { $0.tally.completed += 1 }
        case .failed(let error) where store.isShared && error.heldElsewhere:
            // A worker that lost this item's lease still holds its destination (it was stopped
            // past its lease): back to the queue, to be claimed again once that worker let go.
            settlement = .init(id: id, input: .ownerLost, epoch: epoch, retryAfter: min(5, store.leaseSeconds))
        case .failed(let error):
            settlement = .init(id: id, input: .transferFailed, error: (error.category.name, error.message(naming: run.settingNames)), epoch: epoch)
            run.summary.withLock { $0.failed.append((id, error)) }
            live.withLock { $0.tally.failed += 1 }
        case .cancelled:
            settlement = .init(id: id, input: .transferCancelled, epoch: epoch)
            run.summary.withLock { $0.cancelled.append(id) }
        case .paused:
            // Stopping the whole run hands the item back to the queue; a pause request parks it.
            settlement = .init(id: id, input: draining ? .ownerLost : .transferPaused, epoch: epoch)
            run.summary.withLock { $0.paused.append(id) }
        }
        var completedBytes: Int64?
        if case .completed(let completion) = ending { completedBytes = completion.bytes }
        live.withLock { state in
            state.active(remove: id, completedBytes: completedBytes)
            state.keepFinishedHub(id)
        }
        publishAggregate(force: false)
        return settlement
    }

    /// A transfer that ended without completing (failed, cancelled) leaves its last figures in the
    /// store before they leave the live state: what a stopped download shows from then on (aria2
    /// keeps a removed download's completedLength and totalLength). A pause's figures are written
    /// with its event; a completion's with its settlement; a lost lease writes nothing.
    func keepLastFigures(of ending: DownloadRunner.Ending, _ item: StoredDownload) async {
        switch ending {
        case .failed, .cancelled: break
        case .completed, .paused: return
        }
        let id = item.id
        let last = live.withLock { state -> (DownloadProgress, String?)? in
            guard !state.lostLeases.contains(id), let progress = state.progress[id] else { return nil }
            return (progress, state.destinations[id])
        }
        guard let (progress, destination) = last else { return }
        let store = self.store
        await BlockingWork.run {
            _ = try? store.updateProgress(
                id, bytes: progress.bytes, totalBytes: progress.totalBytes, bytesPerSecond: 0, finalPath: destination, epoch: item.leaseEpoch)
        }
    }

    /// Every event of every download passes here (on its runner's thread).
    func observe(_ id: Int64, _ event: DownloadEvent) {
        if eventListeners.load(ordering: .relaxed) > 0 {
            let listeners = live.withLock { Array($0.eventSubscribers.values) }
            for listener in listeners { listener.yield(QueueEvent(id: id, event: event)) }
        }
        switch event {
        case .progress(let progress), .paused(let progress):
            // A pause's figures (those of its checkpoint) are always written: they are what the
            // store shows while the download is paused, and they must not move until it runs again.
            var isPause = false
            if case .paused = event { isPause = true }
            let persist = live.withLock { state -> (due: Bool, destination: String?, epoch: Int64?) in
                state.progress[id] = progress
                state.speed.reported(id, bytes: progress.bytes)
                let now = ContinuousClock.now
                guard isPause || now - (state.persistedAt[id] ?? now) >= .seconds(1) else { return (false, nil, nil) }
                state.persistedAt[id] = now
                // A download let go (its settlement committed, as a group's completions are before
                // their last report) writes no more figures: its row is settled.
                return (!state.lostLeases.contains(id) && state.held[id] != nil, state.destinations[id], state.epochs[id])
            }
            if persist.due {
                // Handed to the writer: this is the transfer's thread (often the event loop's).
                progressWrites.post(
                    id,
                    .init(
                        bytes: progress.bytes, totalBytes: progress.totalBytes, bytesPerSecond: isPause ? 0 : progress.bytesPerSecond,
                        finalPath: persist.destination, epoch: persist.epoch))
            }
            publishAggregate(force: false)
        case .started(let info):
            live.withLock { $0.speed.started(id, from: info.resumingFrom) }
        case .response(let info):
            // Written with the next progress report, so a long download's `queue list` shows its
            // file while it runs, at no extra cost for a short one.
            live.withLock { $0.destinations[id] = info.destination }
        default:
            break
        }
    }

    /// `allEvents()` and `aggregateProgress()` streams end with the run that fed them.
    private func endRunStreams() {
        eventListeners.store(0, ordering: .relaxed)
        let (events, aggregates) = live.withLock { state in
            defer {
                state.eventSubscribers.removeAll()
                state.aggregateSubscribers.removeAll()
            }
            return (Array(state.eventSubscribers.values), Array(state.aggregateSubscribers.values))
        }
        for continuation in events { continuation.finish() }
        for continuation in aggregates { continuation.finish() }
    }

    func publishAggregate(force: Bool) {
        // Checked without the lock first: many workers report progress, few reports are due.
        let nowNanos = Int64(DispatchTime.now().uptimeNanoseconds)
        guard force || nowNanos - nextAggregateNanos.load(ordering: .relaxed) >= 0 else { return }
        nextAggregateNanos.store(nowNanos + 250_000_000, ordering: .relaxed)
        let (snapshot, subscribers) = live.withLock { state -> (QueueProgress?, [AsyncStream<QueueProgress>.Continuation]) in
            state.speed.sample(at: Double(nowNanos) / 1e9)
            state.aggregate = state.tally.progress(active: state.progress, bytesPerSecond: state.speed.bytesPerSecond)
            return (state.aggregate, Array(state.aggregateSubscribers.values))
        }
        guard let snapshot else { return }
        for subscriber in subscribers { subscriber.yield(snapshot) }
    }
}

extension DownloadQueue.LiveState {
    /// `id` ended: its hub is among those kept, and the oldest beyond the limit is let go (unless
    /// it runs again).
    mutating func keepFinishedHub(_ id: Int64) {
        finishedHubs.removeAll { $0 == id }
        finishedHubs.append(id)
        while finishedHubs.count > finishedHubLimit {
            let oldest = finishedHubs.removeFirst()
            if hubs[oldest]?.isFinished == true { hubs.removeValue(forKey: oldest) }
        }
    }

    /// A finished download leaves the active set; its bytes and total stay counted in the
    /// aggregate (`completedBytes`: it completed, at that size), unless not `counting` (a transfer
    /// whose lease was lost, someone else's now).
    mutating func active(remove id: Int64, completedBytes: Int64? = nil, counting: Bool = true) {
        let last = progress.removeValue(forKey: id)
        speed.ended(id)
        if counting { tally.ended(last: last, completedBytes: completedBytes) }
        persistedAt.removeValue(forKey: id)
        destinations.removeValue(forKey: id)
        epochs.removeValue(forKey: id)
    }
}

/// What a run's workers share: the summary.
final class RunState: Sendable {
    let summary = Mutex(QueueRunSummary())
    /// What the stored failure messages call settings.
    let settingNames: SettingNames

    init(settingNames: SettingNames) {
        self.settingNames = settingNames
    }
}

extension DownloadQueue {
    /// The lease of `id` was lost (another worker holds the item now): this process writes nothing
    /// more for it, and its transfer is stopped.
    /// Returns false (and marks nothing) when the lease of that epoch is no longer held: its
    /// settlement was committed meanwhile.
    @discardableResult
    func leaseLost(_ id: Int64, epoch: Int64? = nil) -> Bool {
        live.withLock { state in
            if let epoch, state.held[id] != epoch { return false }
            state.lostLeases.insert(id)
            return true
        }
    }
}
