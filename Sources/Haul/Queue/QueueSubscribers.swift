import Synchronization

/// Who listens to a queue in this process: each download's event hub (those running, and the
/// last `finishedHubLimit` that ended, whose whole story a late subscriber still gets), and the
/// streams of a run (`allEvents()`, `aggregateProgress()`), which end with it. One of the queue's
/// owners of live state (with `QueueProgressBoard`, `RunningItems`, `HeldLeases`).
final class QueueSubscribers: Sendable {
    private struct State {
        /// Hubs of running downloads and of the last `finishedHubLimit` that ended
        /// (`finishedHubs`, oldest first). Older ones are let go: a long-running `haul serve`
        /// keeps memory for its recent downloads, not for every one it ever ran (about 1 KiB each).
        var hubs: [Int64: EventHub] = [:]
        var finishedHubs: [Int64] = []
        var finishedHubLimit = 1024
        var aggregates: [Int: AsyncStream<QueueProgress>.Continuation] = [:]
        var events: [Int: AsyncStream<QueueEvent>.Continuation] = [:]
        var nextSubscriber = 0
    }

    private let state = Mutex(State())
    /// How many `allEvents()` streams are open, read without the lock on every event.
    private let eventListeners = Atomic<Int>(0)

    // MARK: hubs

    /// The hub of `id`, made by `make` when there is none, or (`fresh`) when the one there has
    /// finished (a failed download resumed).
    func hub(for id: Int64, fresh: Bool, make: () -> EventHub) -> EventHub {
        state.withLock { state in
            if let existing = state.hubs[id], !(fresh && existing.isFinished) { return existing }
            let hub = make()
            state.hubs[id] = hub
            return hub
        }
    }

    /// `id` ended: its hub is among those kept, and the oldest beyond the limit is let go (unless
    /// it runs again).
    func keepFinishedHub(_ id: Int64) {
        state.withLock { state in
            state.finishedHubs.removeAll { $0 == id }
            state.finishedHubs.append(id)
            while state.finishedHubs.count > state.finishedHubLimit {
                let oldest = state.finishedHubs.removeFirst()
                if state.hubs[oldest]?.isFinished == true { state.hubs.removeValue(forKey: oldest) }
            }
        }
    }

    /// `id` left the queue: its story goes too.
    func forgetHub(_ id: Int64) {
        _ = state.withLock { $0.hubs.removeValue(forKey: id) }
    }

    /// How many finished downloads keep their hub (tests lower it).
    func setFinishedHubLimit(_ limit: Int) {
        state.withLock { $0.finishedHubLimit = limit }
    }

    /// The downloads whose hub is kept now.
    var hubIDs: Set<Int64> { state.withLock { Set($0.hubs.keys) } }

    // MARK: run streams

    /// Adds an aggregate stream; it gets `current()` first, read under this owner's lock so that
    /// no report published meanwhile falls between (a report is made before it is handed here:
    /// one made before this subscription is reflected in `current()`, one made after reaches it).
    func addAggregate(_ continuation: AsyncStream<QueueProgress>.Continuation, current: () -> QueueProgress) -> Int {
        state.withLock { state in
            continuation.yield(current())
            defer { state.nextSubscriber += 1 }
            state.aggregates[state.nextSubscriber] = continuation
            return state.nextSubscriber
        }
    }

    func removeAggregate(_ id: Int) {
        _ = state.withLock { $0.aggregates.removeValue(forKey: id) }
    }

    func addEvents(_ continuation: AsyncStream<QueueEvent>.Continuation) -> Int {
        state.withLock { state in
            defer { state.nextSubscriber += 1 }
            state.events[state.nextSubscriber] = continuation
            eventListeners.store(state.events.count, ordering: .relaxed)
            return state.nextSubscriber
        }
    }

    func removeEvents(_ id: Int) {
        state.withLock { state in
            state.events.removeValue(forKey: id)
            eventListeners.store(state.events.count, ordering: .relaxed)
        }
    }

    /// Hands `event` of `id` to every `allEvents()` stream; costs no lock while none is open.
    func publish(_ event: DownloadEvent, of id: Int64) {
        guard eventListeners.load(ordering: .relaxed) > 0 else { return }
        let listeners = state.withLock { Array($0.events.values) }
        for listener in listeners { listener.yield(QueueEvent(id: id, event: event)) }
    }

    /// Hands `progress` to every aggregate stream.
    func publish(_ progress: QueueProgress) {
        let subscribers = state.withLock { Array($0.aggregates.values) }
        for subscriber in subscribers { subscriber.yield(progress) }
    }

    /// Ends every run stream (outside the lock: a finish calls its termination handler, which
    /// comes back here).
    func endRunStreams() {
        eventListeners.store(0, ordering: .relaxed)
        let (events, aggregates) = state.withLock { state in
            defer {
                state.events.removeAll()
                state.aggregates.removeAll()
            }
            return (Array(state.events.values), Array(state.aggregates.values))
        }
        for continuation in events { continuation.finish() }
        for continuation in aggregates { continuation.finish() }
    }
}
