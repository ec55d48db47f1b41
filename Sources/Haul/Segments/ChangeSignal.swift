import Foundation
import Synchronization

/// A wait for a condition on state another thread changes, without polling: the waiter checks
/// the condition after each `notify()` (and at its deadline). `notify()` costs one atomic load
/// while nobody waits, so a hot path (every body chunk) may call it. A thread waits with `wait`,
/// a task with `waitAsync` (which holds no thread).
final class ChangeSignal: Sendable {
    private let condition = ConditionBox()
    private let tasks = AsyncSignal()
    private let waiters = Atomic<Int>(0)

    /// Something a waiter may be waiting for changed.
    func notify() {
        guard waiters.load(ordering: .acquiring) > 0 else { return }
        condition.bump()
        tasks.notify()
    }

    /// `wait` for a task: suspended, no thread held, until `done()` holds or `timeout` seconds
    /// passed (nil: no limit); returns whether it holds.
    @discardableResult
    func waitAsync(timeout: Double? = nil, until done: @Sendable () -> Bool) async -> Bool {
        waiters.add(1, ordering: .acquiringAndReleasing)
        defer { waiters.subtract(1, ordering: .acquiringAndReleasing) }
        let deadline = timeout.map { ContinuousClock.now + .milliseconds(Int64($0 * 1000)) }
        while true {
            let seen = tasks.generation
            if done() { return true }
            var left: Double?
            if let deadline {
                let remaining = (deadline - .now) / .seconds(1)
                guard remaining > 0 else { return done() }
                left = remaining
            }
            // A notify after `seen` ends the wait at once: none is lost between the look and the wait.
            await tasks.wait(seconds: left, since: seen)
        }
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
