import Dispatch
import Synchronization

/// A wake-up for tasks: `wait(seconds:)` suspends until `notify()` or the time is up, without a
/// thread waiting. No wake-up is lost: a wait is skipped when `unless` says the thing waited for
/// is already there, or when a `notify` came since the `generation` the waiter saw before it
/// looked (both checked under the signal's lock).
final class AsyncSignal: Sendable {
    private struct State {
        var generation = 0
        var next = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    /// Ends every wait now.
    func notify() {
        let waiters = state.withLock { state in
            state.generation += 1
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Counts the `notify` calls: read before looking for work, passed to `wait`.
    var generation: Int { state.withLock { $0.generation } }

    /// Waits for `notify()` or `seconds` (nil: no limit), whichever comes first; at once when
    /// `done()` is already true or a `notify` came after `since`.
    func wait(seconds: Double?, since seen: Int? = nil, unless done: @Sendable () -> Bool = { false }) async {
        if let seconds, seconds <= 0 { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let id = state.withLock { state -> Int? in
                if done() { return nil }
                if let seen, seen != state.generation { return nil }
                state.next += 1
                state.waiters[state.next] = continuation
                return state.next
            }
            guard let id else {
                continuation.resume()
                return
            }
            guard let seconds else { return }
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [self] in
                let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
                waiter?.resume()
            }
        }
    }
}
