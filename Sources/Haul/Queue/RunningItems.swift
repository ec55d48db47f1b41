import Synchronization

/// The downloads this process runs now and how to steer them: each one's control (pause, cancel)
/// and speed limiter, the long-running run's limit and wake-up, and whether the run is draining
/// (claims nothing more). One of the queue's owners of live state (with `QueueSubscribers`,
/// `QueueProgressBoard`, `HeldLeases`).
final class RunningItems: Sendable {
    private struct State {
        var controls: [Int64: RunControl] = [:]
        /// The speed limiter of each download a long-running run runs now.
        var limiters: [Int64: RateLimiter] = [:]
        /// The running long-lived run's limit and wake-up, if one runs.
        var concurrency: QueueConcurrency?
        var draining = false
    }

    private let state = Mutex(State())

    /// A run begins (draining at once when a stop was asked of it before it got here), with
    /// `concurrency` when it is a long-running one.
    func begin(draining: Bool, concurrency: QueueConcurrency?) {
        state.withLock { state in
            state.draining = draining
            state.concurrency = concurrency
        }
    }

    /// The run ended: no long-running run to wake.
    func endRun() {
        state.withLock { $0.concurrency = nil }
    }

    /// Claims nothing more; returns the controls of what runs now, to be paused. (Taken together,
    /// so a download is either among them or registered after the run began to drain.)
    func drain() -> [RunControl] {
        state.withLock { state in
            state.draining = true
            return Array(state.controls.values)
        }
    }

    var isDraining: Bool { state.withLock { $0.draining } }

    var concurrency: QueueConcurrency? { state.withLock { $0.concurrency } }

    /// `id` starts, steered by `control`; false (nothing registered) once the run drains: an item
    /// its claim leased while the stop was asked (a claim waiting for a locked store, or a
    /// follower of a combined claim) is not started, it goes back to the queue.
    func started(_ id: Int64, _ control: RunControl) -> Bool {
        state.withLock { state in
            guard !state.draining else { return false }
            state.controls[id] = control
            return true
        }
    }

    /// `id` can change its speed limit while it runs.
    func attach(_ limiter: RateLimiter, to id: Int64) {
        state.withLock { $0.limiters[id] = limiter }
    }

    func ended(_ id: Int64) {
        state.withLock { state in
            state.controls.removeValue(forKey: id)
            state.limiters.removeValue(forKey: id)
        }
    }

    func control(_ id: Int64) -> RunControl? {
        state.withLock { $0.controls[id] }
    }

    var controls: [Int64: RunControl] { state.withLock { $0.controls } }

    func limiter(_ id: Int64) -> RateLimiter? {
        state.withLock { $0.limiters[id] }
    }
}
