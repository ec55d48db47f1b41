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
        var scope = ((try? storeCall { try $0.all() }) ?? []).filter { ids?.contains($0.id) ?? true }
        // Moves a crash cut short (`haul serve` started again), of paused and complete downloads
        // too; one the move had paused goes back to the queue, so the scope is read again.
        if scope.contains(where: { $0.moveIntent != nil }) {
            let left = scope
            await BlockingWork.run { settleLeftMoves(left) }
            scope = ((try? storeCall { try $0.all() }) ?? scope).filter { ids?.contains($0.id) ?? true }
        }
        board.begin(QueueTally(scope: scope))
        // A group's completions are settled as soon as its files are in place, before any is
        // announced: what a `.completed` event (or a notification) says, every read already says.
        let settler = self.settler
        let finishGroups = FinishGroups(afterGroup: { placed in settler.settleCompleted(placed) })
        let runState = RunState(
            options: options, ids: ids, rules: ClaimRules(maxPerHost: maxPerHost), finishGroups: finishGroups, settler: settler)
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
                    await QueueWorker(queue: self, index: index, workers: workers, run: runState).work()
                }
            }
        }
        // Items held ahead that no worker took (every worker ended on an error): back to the queue.
        await BlockingWork.run { runState.claims.releaseAhead() }
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
    package func pendingCount() throws(DownloadError) -> Int {
        try storeCall { try $0.pendingCount() }
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
            // The board says whether the figures are due, the lease under which they may be
            // written: a download let go (its settlement committed, as a group's completions are
            // before their last report) or whose lease was lost writes no more figures. A lease
            // lost after this look is caught by the store, which checks it.
            if let due = board.record(progress, of: id, isPause: isPause), let lease = leases.writable(id) {
                // Handed to the writer: this is the transfer's thread (often the event loop's).
                progressWrites.post(
                    id,
                    .init(
                        bytes: progress.bytes, totalBytes: progress.totalBytes, bytesPerSecond: isPause ? 0 : progress.bytesPerSecond,
                        finalPath: due.destination, lease: lease))
            }
            publishAggregate(force: false)
        case .started(let info):
            board.resumes(id, from: info.resumingFrom)
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
