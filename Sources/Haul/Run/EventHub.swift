import Synchronization

/// Fans a download's events out to any number of subscribers.
///
/// A subscriber that joins late first receives what it missed: every event except progress
/// (started, response, restarted, retrying, paused; the most recent `historyLimit` of them), then
/// the latest progress, so a progress bar attached mid-download does not sit at zero; one that
/// joins after the end also receives the terminal event.
final class EventHub: Sendable {
    static let historyLimit = 64

    private struct State {
        var subscribers: [Int: AsyncStream<DownloadEvent>.Continuation] = [:]
        var nextID = 0
        var history: [DownloadEvent] = []
        var latestProgress: DownloadEvent?
        var terminal: DownloadEvent?

        var replay: [DownloadEvent] {
            history + [latestProgress, terminal].compactMap { $0 }
        }

        mutating func remember(_ event: DownloadEvent) {
            switch event {
            case .progress:
                latestProgress = event
            case .completed, .failed, .cancelled:
                terminal = event
            case .paused:
                latestProgress = nil
                fallthrough
            default:
                history.append(event)
                if history.count > EventHub.historyLimit { history.removeFirst() }
            }
        }
    }

    private let state = Mutex(State())
    /// Called synchronously with every event, on the publishing thread (the queue uses it for
    /// aggregate progress and to persist progress).
    private let observer: (@Sendable (DownloadEvent) -> Void)?

    init(observer: (@Sendable (DownloadEvent) -> Void)? = nil) {
        self.observer = observer
    }

    /// Whether the terminal event has been published; a new run needs a new hub.
    var isFinished: Bool {
        state.withLock { $0.terminal != nil }
    }

    func subscribe() -> AsyncStream<DownloadEvent> {
        let (replay, stream) = subscribeAfterReplay(replayed: true)
        assert(replay.isEmpty)
        return stream
    }

    /// What a late subscriber missed, and the stream of what comes after it (taken together, so
    /// nothing falls between): for a subscriber that folds the past at once (`Download.snapshots`).
    func subscribeAfterReplay() -> (replay: [DownloadEvent], live: AsyncStream<DownloadEvent>) {
        subscribeAfterReplay(replayed: false)
    }

    private func subscribeAfterReplay(replayed: Bool) -> (replay: [DownloadEvent], live: AsyncStream<DownloadEvent>) {
        let (stream, continuation) = AsyncStream<DownloadEvent>.makeStream()
        var missed: [DownloadEvent] = []
        let id: Int? = state.withLock { state in
            if replayed {
                for event in state.replay { continuation.yield(event) }
            } else {
                missed = state.replay
            }
            if state.terminal != nil {
                continuation.finish()
                return nil
            }
            let id = state.nextID
            state.nextID += 1
            state.subscribers[id] = continuation
            return id
        }
        if let id {
            continuation.onTermination = { [weak self] _ in
                self?.state.withLock { _ = $0.subscribers.removeValue(forKey: id) }
            }
        }
        return (missed, stream)
    }

    func publish(_ event: DownloadEvent) {
        // Yielding under the lock keeps every subscriber's order identical to the publish order.
        // Finishing happens outside it: `finish()` runs `onTermination`, which takes the lock.
        let (accepted, finished) = state.withLock { state -> (Bool, [AsyncStream<DownloadEvent>.Continuation]) in
            guard state.terminal == nil else { return (false, []) }
            state.remember(event)
            for continuation in state.subscribers.values {
                continuation.yield(event)
            }
            guard event.isTerminal else { return (true, []) }
            defer { state.subscribers.removeAll() }
            return (true, Array(state.subscribers.values))
        }
        for continuation in finished {
            continuation.finish()
        }
        if accepted { observer?(event) }
    }
}
