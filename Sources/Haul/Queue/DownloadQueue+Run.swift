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
        board.begin(QueueTally(scope: scope))
        let runState = RunState(settingNames: options.settingNames)
        // A group's completions are settled as soon as its files are in place, before any is
        // announced: what a `.completed` event (or a notification) says, every read already says.
        let finishGroups = FinishGroups(afterGroup: { [weak self] placed in self?.settleCompleted(placed) })
        let workers = options.concurrency?.maximum ?? max(1, options.maxConcurrent)
        // A stop asked of a long-running run before it got here holds (a signal sent as soon as
        // `haul serve` listens).
        running.begin(draining: options.concurrency?.isStopRequested ?? false, concurrency: options.concurrency)
        let keeper = LeaseKeeper(queue: self)
        keeper.start()
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<workers {
                // A task each, not a thread: transfers wait on the transport's event loop, store
                // calls and syncs on `BlockingWork`'s pool.
                group.addTask {
                    await self.work(index, of: workers, options, ids, runState, ClaimRules(maxPerHost: maxPerHost), finishGroups)
                }
            }
        }
        await keeper.stop()
        running.endRun()
        runState.summary.withLock { $0.finishGroups = finishGroups.figures }
        // Downloads that ended gave up their credentials: no copy stays in the write-ahead log.
        store.forgetRemovedSecrets()
        publishAggregate(force: true)
        subscribers.endRunStreams()
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
        // Spans two owners, one at a time: the board counts it before its control can be found,
        // and nothing reads both together (a pause finds it by its control alone).
        board.started(item.id)
        running.started(item.id, control)
        defer { running.ended(item.id) }
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
        // Two flags of two owners, each read once: a drain or a lost lease after these reads is
        // the same as one just after the transfer ended (the store's epoch check refuses the rest).
        let draining = running.isDraining
        let epoch = item.leaseEpoch
        let settlement: QueueSettlement
        if leases.takeLost(id) {
            // Someone else's now: nothing of this transfer counts, and its settlement is refused.
            board.ended(id, .lost)
            return QueueSettlement(id: id, input: .transferPaused, epoch: epoch)
        }
        let ended: QueueProgressBoard.Ending
        switch ending {
        case .completed(let completion):
            settlement = .init(id: id, input: .transferCompleted, finished: (completion.bytes, completion.path), epoch: epoch)
            run.summary.withLock { summary in
                summary.completed.append(id)
                if completion.alreadyComplete { summary.alreadyComplete.append(id) }
            }
            ended = .completed(bytes: completion.bytes)
        case .failed(let error) where store.isShared && error.heldElsewhere:
            // A worker that lost this item's lease still holds its destination (it was stopped
            // past its lease): back to the queue, to be claimed again once that worker let go.
            settlement = .init(id: id, input: .ownerLost, epoch: epoch, retryAfter: min(5, store.leaseSeconds))
            ended = .stopped
        case .failed(let error):
            settlement = .init(id: id, input: .transferFailed, error: (error.category.name, error.message(naming: run.settingNames)), epoch: epoch)
            run.summary.withLock { $0.failed.append((id, error)) }
            ended = .failed
        case .cancelled:
            settlement = .init(id: id, input: .transferCancelled, epoch: epoch)
            run.summary.withLock { $0.cancelled.append(id) }
            ended = .stopped
        case .paused:
            // Stopping the whole run hands the item back to the queue; a pause request parks it.
            settlement = .init(id: id, input: draining ? .ownerLost : .transferPaused, epoch: epoch)
            run.summary.withLock { $0.paused.append(id) }
            ended = .stopped
        }
        // Its figures leave the active set and join the tally in one step of the board's; the hub
        // is kept apart (nothing reads it with the figures).
        board.ended(id, ended)
        subscribers.keepFinishedHub(id)
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
        // A lease lost after this look is caught by the store: the write names the claimed epoch.
        guard !leases.isLost(id), let (progress, destination) = board.last(id) else { return }
        let store = self.store
        await BlockingWork.run {
            _ = try? store.updateProgress(
                id, bytes: progress.bytes, totalBytes: progress.totalBytes, bytesPerSecond: 0, finalPath: destination, epoch: item.leaseEpoch)
        }
    }

    /// Every event of every download passes here (on its runner's thread).
    func observe(_ id: Int64, _ event: DownloadEvent) {
        subscribers.publish(event, of: id)
        switch event {
        case .progress(let progress), .paused(let progress):
            // A pause's figures (those of its checkpoint) are always written: they are what the
            // store shows while the download is paused, and they must not move until it runs again.
            var isPause = false
            if case .paused = event { isPause = true }
            // The board says whether the figures are due, the lease under which epoch they may be
            // written: a download let go (its settlement committed, as a group's completions are
            // before their last report) or whose lease was lost writes no more figures. A lease
            // lost after this look is caught by the store, which checks the epoch.
            if let due = board.record(progress, of: id, isPause: isPause), let epoch = leases.writableEpoch(id) {
                // Handed to the writer: this is the transfer's thread (often the event loop's).
                progressWrites.post(
                    id,
                    .init(
                        bytes: progress.bytes, totalBytes: progress.totalBytes, bytesPerSecond: isPause ? 0 : progress.bytesPerSecond,
                        finalPath: due.destination, epoch: epoch))
            }
            publishAggregate(force: false)
        case .response(let info):
            // Written with the next progress report, so a long download's `queue list` shows its
            // file while it runs, at no extra cost for a short one.
            board.setDestination(info.destination, of: id)
        default:
            break
        }
    }

    /// Hands subscribers a new aggregate report when one is due (`force`: now). Spans two owners,
    /// one at a time: the report is made on the board, then handed out (see `aggregateProgress`).
    func publishAggregate(force: Bool) {
        guard let report = board.report(force: force) else { return }
        subscribers.publish(report)
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
