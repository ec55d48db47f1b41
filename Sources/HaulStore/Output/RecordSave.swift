import Foundation
import Synchronization

/// A resume record being saved on the blocking pool for a response whose body must not reach the
/// file before it is saved: the event loop's thread looks (`isDone`) and parks the transfer
/// meanwhile; a thread of the transfer's own, or a task, waits for it.
package final class RecordSave: Sendable {
    private struct State {
        var ended = false
        var failure: StoreError?
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    private let ended = DispatchSemaphore(value: 0)

    /// Runs `save` through `run` (a pool thread); `whenDone` is called after it ended (to wake
    /// the loop that parked the transfer).
    package init(
        on run: (@escaping @Sendable () -> Void) -> Void, whenDone: @escaping @Sendable () -> Void, _ save: @escaping @Sendable () throws(StoreError) -> Void
    ) {
        run { [self] in
            var failure: StoreError?
            do throws(StoreError) {
                try save()
            } catch {
                failure = error
            }
            let waiters = state.withLock { state in
                state.ended = true
                state.failure = failure
                defer { state.waiters = [] }
                return state.waiters
            }
            ended.signal()
            for waiter in waiters { waiter.resume() }
            whenDone()
        }
    }

    /// Whether the save ended (saved or failed); never blocks.
    package var isDone: Bool { state.withLock { $0.ended } }

    /// The save's failure once it ended; nil while it runs or when it saved.
    package var failure: StoreError? { state.withLock { $0.failure } }

    /// Waits on this thread for the save to end; its failure.
    package func wait() -> StoreError? {
        if !isDone {
            ended.wait()
            ended.signal()
        }
        return failure
    }

    /// Waits, without holding a thread, for the save to end; its failure.
    package func done() async -> StoreError? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waiting = state.withLock { state -> Bool in
                guard !state.ended else { return false }
                state.waiters.append(continuation)
                return true
            }
            if !waiting { continuation.resume() }
        }
        return failure
    }
}
