import Synchronization

/// When a queue worker may take its next item: once the download it runs no longer transfers
/// (its file is being put in place with a group, `FinishGroups`) or has ended. So the syncs and
/// commits that put a file in place overlap the next transfer instead of holding the worker.
/// One-shot: the first `release()` ends the wait, later ones do nothing.
final class ItemHandoff: Sendable {
    private struct State {
        var released = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    /// The worker may go on.
    func release() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.released else { return nil }
            state.released = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Waits for `release()` (at once if it came already).
    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.released { return true }
                state.waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }
}
