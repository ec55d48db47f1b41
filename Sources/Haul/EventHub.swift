import Synchronization

/// Fans a download's events out to any number of subscribers.
///
/// A subscriber that joins late first receives the current state (the latest `started`,
/// `response` and `progress` or `paused`), so a progress bar attached mid-download does not sit at zero;
/// one that joins after the end receives the terminal event.
final class EventHub: Sendable {
    private struct State {
        var subscribers: [Int: AsyncStream<DownloadEvent>.Continuation] = [:]
        var nextID = 0
        var started: DownloadEvent?
        var response: DownloadEvent?
        var latest: DownloadEvent?
        var terminal: DownloadEvent?

        var replay: [DownloadEvent] {
            [started, response, latest, terminal].compactMap { $0 }
        }
    }

    private let state = Mutex(State())

    func subscribe() -> AsyncStream<DownloadEvent> {
        let (stream, continuation) = AsyncStream<DownloadEvent>.makeStream()
        let id: Int? = state.withLock { state in
            for event in state.replay { continuation.yield(event) }
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
        return stream
    }

    func publish(_ event: DownloadEvent) {
        let subscribers = state.withLock { state -> [AsyncStream<DownloadEvent>.Continuation] in
            guard state.terminal == nil else { return [] }
            switch event {
            case .started:
                state.started = event
                state.response = nil
                state.latest = nil
            case .response: state.response = event
            case .progress, .paused: state.latest = event
            case .completed, .failed, .cancelled: state.terminal = event
            case .restarted, .retrying: break
            }
            let all = Array(state.subscribers.values)
            if event.isTerminal { state.subscribers.removeAll() }
            return all
        }
        for continuation in subscribers {
            continuation.yield(event)
            if event.isTerminal { continuation.finish() }
        }
    }
}
