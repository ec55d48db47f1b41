import Foundation
import HaulCore
import HaulEngine
import HaulStore
import Synchronization

extension DownloadQueue {
    /// Runs queued downloads, `options.maxConcurrent` at a time, until none is left to claim
    /// (`only` limits the run to some ids, as a batch does). Downloads left behind by a process that
    /// died are taken over and resume from their records. Returns when every worker is done.
    public func run(_ options: QueueRunOptions = QueueRunOptions(), only ids: Set<Int64>? = nil) async -> QueueRunSummary {
        let pending = ids?.count ?? (try? store.all().filter { $0.state == .queued || $0.state.hasTransfer }.count) ?? 0
        live.withLock { state in
            state.draining = false
            state.finishedBytes = 0
            state.aggregate = QueueProgress(filesTotal: pending)
        }
        let summary = SummaryCollector()
        let workers = max(1, options.maxConcurrent)
        let leases = LeaseKeeper(queue: self)
        leases.start()
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<workers {
                group.addTask {
                    await Self.onThread(name: "haul-worker-\(index)") {
                        self.work(options, ids, summary)
                    }
                }
            }
        }
        leases.stop()
        publishAggregate(force: true)
        endRunStreams()
        return summary.value.withLock { $0 }
    }

    /// One worker: claim, download, record the outcome, repeat.
    private func work(_ options: QueueRunOptions, _ ids: Set<Int64>?, _ summary: SummaryCollector) {
        while !live.withLock({ $0.draining }) {
            let claimed: StoredDownload?
            do {
                claimed = try store.claimNext(for: owner, among: ids)
            } catch {
                // A locked store is retried by the next worker loop; anything else ends this worker.
                if error.kind == .locked { continue }
                return
            }
            guard let item = claimed else { return }
            let ending = runItem(item, options)
            record(ending, of: item.id, summary)
        }
    }

    private func runItem(_ item: StoredDownload, _ options: QueueRunOptions) -> DownloadRunner.Ending {
        let control = RunControl()
        let hub = hub(for: item.id, fresh: true)
        live.withLock { $0.controls[item.id] = control }
        defer { _ = live.withLock { $0.controls.removeValue(forKey: item.id) } }
        guard let request = Self.request(for: item, options) else {
            let error = DownloadError(.usage, "download \(item.id) has an invalid URL: \(item.url)")
            hub.publish(.failed(error))
            return .failed(error)
        }
        let store = self.store
        let id = item.id
        let runner = DownloadRunner(request: request, transport: transport, hub: hub, control: control, records: { _ in store.recordSlot(id) })
        return runner.run()
    }

    private func record(_ ending: DownloadRunner.Ending, of id: Int64, _ summary: SummaryCollector) {
        let draining = live.withLock { $0.draining }
        switch ending {
        case .completed(let completion):
            _ = try? store.updateProgress(id, bytes: completion.bytes, totalBytes: completion.bytes, bytesPerSecond: 0, finalPath: completion.path)
            _ = try? store.apply(.transferCompleted, to: id)
            summary.value.withLock { $0.completed.append(id) }
            live.withLock { $0.aggregate.filesCompleted += 1 }
        case .failed(let error):
            _ = try? store.apply(.transferFailed, to: id, error: (error.category.name, error.message))
            summary.value.withLock { $0.failed.append((id, error)) }
            live.withLock { $0.aggregate.filesFailed += 1 }
        case .cancelled:
            _ = try? store.apply(.transferCancelled, to: id)
            summary.value.withLock { $0.cancelled.append(id) }
        case .paused:
            // Stopping the whole run hands the item back to the queue; a pause request parks it.
            _ = try? store.apply(draining ? .ownerLost : .transferPaused, to: id)
            summary.value.withLock { $0.paused.append(id) }
        }
        live.withLock { state in
            state.active(remove: id)
        }
        publishAggregate(force: true)
    }

    /// Rebuilds the request from the stored item and the run's options.
    static func request(for item: StoredDownload, _ options: QueueRunOptions) -> DownloadRequest? {
        guard let url = URL(string: item.url) else { return nil }
        let destination: Destination = item.destinationKind == .file ? .file(item.destination) : .directory(item.destination)
        var request = DownloadRequest(url: url, destination: destination, method: item.method, headers: HTTPHeaders(item.headers), body: item.body)
        if let range = item.range, let spec = try? ByteRangeSpec(parsing: range) {
            request.target = .range(spec)
        }
        switch item.existingPolicy {
        case "overwrite": request.existingFile = .overwrite
        case "continue": request.existingFile = .continueIt
        default: request.existingFile = .refuse
        }
        request.retry = options.retry
        request.transfer = options.transfer
        request.maxRedirects = options.maxRedirects
        return request
    }

    /// Every event of every download passes here (on its runner's thread).
    func observe(_ id: Int64, _ event: DownloadEvent) {
        let listeners = live.withLock { Array($0.eventSubscribers.values) }
        for listener in listeners { listener.yield(QueueEvent(id: id, event: event)) }
        switch event {
        case .progress(let progress), .paused(let progress):
            let persist = live.withLock { state -> Bool in
                state.progress[id] = progress
                let now = ContinuousClock.now
                guard now - (state.persistedAt[id] ?? now - .seconds(10)) >= .seconds(1) else { return false }
                state.persistedAt[id] = now
                return true
            }
            if persist {
                _ = try? store.updateProgress(id, bytes: progress.bytes, totalBytes: progress.totalBytes, bytesPerSecond: progress.bytesPerSecond, finalPath: nil)
            }
            publishAggregate(force: false)
        case .response(let info):
            _ = try? store.updateProgress(id, bytes: info.resumedFrom, totalBytes: info.totalBytes, bytesPerSecond: 0, finalPath: info.destination)
        default:
            break
        }
    }

    /// `allEvents()` and `aggregateProgress()` streams end with the run that fed them.
    private func endRunStreams() {
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
        let (snapshot, subscribers) = live.withLock { state -> (QueueProgress?, [AsyncStream<QueueProgress>.Continuation]) in
            let now = ContinuousClock.now
            guard force || now - state.lastAggregate >= .milliseconds(250) else { return (nil, []) }
            state.lastAggregate = now
            state.aggregate.active = state.progress
            state.aggregate.bytes = state.finishedBytes + state.progress.values.reduce(0) { $0 + $1.bytes }
            state.aggregate.bytesPerSecond = state.progress.values.reduce(0) { $0 + $1.bytesPerSecond }
            let totals = state.progress.values.map(\.totalBytes)
            state.aggregate.totalBytes = totals.contains(nil) ? nil : totals.reduce(0) { $0 + ($1 ?? 0) }
            return (state.aggregate, Array(state.aggregateSubscribers.values))
        }
        guard let snapshot else { return }
        for subscriber in subscribers { subscriber.yield(snapshot) }
    }

    /// Runs blocking work on a thread of its own, never on the cooperative pool.
    static func onThread(name: String, _ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                body()
                continuation.resume()
            }
            thread.name = name
            thread.stackSize = 1 << 20
            thread.start()
        }
    }
}

extension DownloadQueue.LiveState {
    /// A finished download leaves the active set; its bytes stay counted in the aggregate.
    mutating func active(remove id: Int64) {
        if let last = progress.removeValue(forKey: id) {
            finishedBytes += last.bytes
        }
        persistedAt.removeValue(forKey: id)
    }
}

/// Collects what a run did, from all its workers.
final class SummaryCollector: Sendable {
    let value = Mutex(QueueRunSummary())
}

/// Renews this process's leases every few seconds and relays pause/cancel requests that other
/// processes wrote to the store to the running transfers.
final class LeaseKeeper: Sendable {
    private let queue: DownloadQueue
    private let stopped = Atomic<Bool>(false)
    private let wake = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)

    init(queue: DownloadQueue) {
        self.queue = queue
    }

    func start() {
        let thread = Thread { [self] in
            while !stopped.load(ordering: .acquiring) {
                _ = wake.wait(timeout: .now() + 2)
                guard !stopped.load(ordering: .acquiring) else { break }
                guard let states = try? queue.store.renewLeases(for: queue.owner) else { continue }
                for (id, state) in states {
                    switch state {
                    case .pausing: queue.control(id)?.request(.pause)
                    case .cancelling: queue.control(id)?.request(.cancel)
                    default: break
                    }
                }
            }
            done.signal()
        }
        thread.name = "haul-leases"
        thread.start()
    }

    func stop() {
        stopped.store(true, ordering: .releasing)
        wake.signal()
        done.wait()
    }
}
