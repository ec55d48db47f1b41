import Foundation
import Synchronization

/// A wait for a condition on state another thread changes, without polling: the waiter checks
/// the condition after each `notify()` (and at its deadline). `notify()` costs one atomic load
/// while nobody waits, so a hot path (every body chunk) may call it.
final class ChangeSignal: Sendable {
    private let condition = ConditionBox()
    private let waiters = Atomic<Int>(0)

    /// Something a waiter may be waiting for changed.
    func notify() {
        guard waiters.load(ordering: .acquiring) > 0 else { return }
        condition.bump()
    }

    /// Waits until `done()` holds, or `timeout` seconds passed (nil: no limit); returns whether it
    /// holds. `done` is called without this signal's lock held, so it may take other locks.
    @discardableResult
    func wait(timeout: Double? = nil, until done: () -> Bool) -> Bool {
        waiters.add(1, ordering: .acquiringAndReleasing)
        defer { waiters.subtract(1, ordering: .acquiringAndReleasing) }
        let deadline = timeout.map { Date(timeIntervalSinceNow: $0) }
        while true {
            let seen = condition.generation
            if done() { return true }
            if !condition.wait(past: seen, until: deadline) { return done() }
        }
    }
}

/// An `NSCondition` with a generation count: a waiter sleeps until the generation moves on.
private final class ConditionBox: @unchecked Sendable {
    private let condition = NSCondition()
    private var count = 0

    var generation: Int {
        condition.lock()
        defer { condition.unlock() }
        return count
    }

    func bump() {
        condition.lock()
        count += 1
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until the generation is past `seen`; false when `deadline` came first.
    func wait(past seen: Int, until deadline: Date?) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while count == seen {
            if let deadline {
                if !condition.wait(until: deadline) { return count != seen }
            } else {
                condition.wait()
            }
        }
        return true
    }
}
