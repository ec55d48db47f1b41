import Synchronization

/// The leases this process holds on queue items: each one's fencing epoch from its claim until its
/// settlement is committed (what the heartbeat renews, and nothing else), and those lost to
/// another process meanwhile, for which nothing more is written. One of the queue's owners of live
/// state (with `QueueSubscribers`, `QueueProgressBoard`, `RunningItems`).
final class HeldLeases: Sendable {
    private struct State {
        /// Every lease this process knows it holds (id → epoch). A row a lost claim reply leased
        /// to it is not here: it expires and is rescued, never kept alive by a worker that does
        /// not know of it.
        var held: [Int64: Int64] = [:]
        /// Running downloads whose lease was lost: nothing more of theirs is written.
        var lost: Set<Int64> = []
    }

    private let state = Mutex(State())

    /// `id` was claimed under `epoch` (a lease lost earlier is not this one's).
    func claimed(_ id: Int64, epoch: Int64) {
        state.withLock { state in
            state.held[id] = epoch
            state.lost.remove(id)
        }
    }

    /// The epoch under which this process may still write for `id`: nil once its lease was lost,
    /// or let go (its settlement committed, as a group's completions are before their runner
    /// hears).
    func writableEpoch(_ id: Int64) -> Int64? {
        state.withLock { state in state.lost.contains(id) ? nil : state.held[id] }
    }

    /// Every lease held now (id → epoch), for the heartbeat.
    var held: [Int64: Int64] { state.withLock { $0.held } }

    /// The lease of `id` was lost (another worker holds the item now): this process writes nothing
    /// more for it. Returns false (and marks nothing) when the lease of `epoch` is no longer held:
    /// its settlement was committed meanwhile.
    @discardableResult
    func lose(_ id: Int64, epoch: Int64? = nil) -> Bool {
        state.withLock { state in
            if let epoch, state.held[id] != epoch { return false }
            state.lost.insert(id)
            return true
        }
    }

    func isLost(_ id: Int64) -> Bool {
        state.withLock { $0.lost.contains(id) }
    }

    /// Whether `id`'s lease was lost, forgetting that it was: its transfer has ended.
    func takeLost(_ id: Int64) -> Bool {
        state.withLock { $0.lost.remove(id) != nil }
    }

    /// `settled` reached the store: their leases are no longer this process's to renew (those of a
    /// later claim of the same item, under another epoch, stay).
    func letGo(_ settled: [(id: Int64, epoch: Int64?)]) {
        guard !settled.isEmpty else { return }
        state.withLock { state in
            for settlement in settled where state.held[settlement.id] == settlement.epoch { state.held.removeValue(forKey: settlement.id) }
        }
    }
}
