import HaulStore
import Synchronization

/// The leases this process holds on queue items: each one from its claim until its
/// settlement is committed (what the heartbeat renews, and nothing else), and those lost to
/// another process meanwhile, for which nothing more is written. One of the queue's owners of live
/// state (with `QueueSubscribers`, `QueueProgressBoard`, `RunningItems`).
final class HeldLeases: Sendable {
    private struct State {
        /// Every lease this process knows it holds, by item. A row a lost claim reply leased
        /// to it is not here: it expires and is rescued, never kept alive by a worker that does
        /// not know of it.
        var held: [Int64: Lease] = [:]
        /// Running downloads whose lease was lost: nothing more of theirs is written.
        var lost: Set<Int64> = []
        /// Pauses and cancels other processes asked for items held but not started yet (claimed
        /// ahead): each reaches its transfer as it starts (`takeRequested`).
        var requested: [Int64: RunControl.Request] = [:]
        /// Leases whose settlement is being committed: a renewal that misses one of them read the
        /// store after the commit, and the settlement (not the renewal) says what became of it.
        var settling: Set<Lease> = []
    }

    private let state = Mutex(State())

    /// `lease` was taken by a claim (a lease of the item lost earlier is not this one).
    func claimed(_ lease: Lease) {
        state.withLock { state in
            state.held[lease.item] = lease
            state.lost.remove(lease.item)
        }
    }

    /// The lease under which this process may still write for `id`: nil once it was lost, or let
    /// go (its settlement committed, as a group's completions are before their runner hears).
    func writable(_ id: Int64) -> Lease? {
        state.withLock { state in state.lost.contains(id) ? nil : state.held[id] }
    }

    /// Every lease held now, by item, for the heartbeat.
    var held: [Int64: Lease] { state.withLock { $0.held } }

    /// The lease of `id` was lost (another worker holds the item now): this process writes nothing
    /// more for it.
    func lose(_ id: Int64) {
        _ = state.withLock { state in state.lost.insert(id) }
    }

    /// `lease` was lost: this process writes nothing more for its item. Returns false (and marks
    /// nothing) when `lease` is no longer held: its settlement was committed meanwhile.
    func lose(_ lease: Lease) -> Bool {
        state.withLock { state in
            guard state.held[lease.item] == lease, !state.settling.contains(lease) else { return false }
            state.lost.insert(lease.item)
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

    /// Another process asked `request` of held item `id`, which has no transfer yet: kept for
    /// when it starts.
    func requestAtStart(_ id: Int64, _ request: RunControl.Request) {
        state.withLock { state in
            if state.held[id] != nil { state.requested[id] = request }
        }
    }

    /// What another process asked of `id` before its transfer started, forgetting it.
    func takeRequested(_ id: Int64) -> RunControl.Request? {
        state.withLock { $0.requested.removeValue(forKey: id) }
    }

    /// The settlements of `leases` are about to be committed: none of them is taken for lost
    /// until `letGo` (committed) or `settled(failing:)` (not committed).
    func settling(_ leases: [Lease]) {
        guard !leases.isEmpty else { return }
        state.withLock { $0.settling.formUnion(leases) }
    }

    /// The settlements of `leases` were not committed: they are held as before.
    func settlingFailed(_ leases: [Lease]) {
        guard !leases.isEmpty else { return }
        state.withLock { $0.settling.subtract(leases) }
    }

    /// `settled` reached the store: their leases are no longer this process's to renew (those of a
    /// later claim of the same item, under another epoch, stay).
    func letGo(_ settled: [Lease]) {
        guard !settled.isEmpty else { return }
        state.withLock { state in
            state.settling.subtract(settled)
            for lease in settled where state.held[lease.item] == lease {
                state.held.removeValue(forKey: lease.item)
                state.requested.removeValue(forKey: lease.item)
            }
        }
    }
}
