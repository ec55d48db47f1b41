import Foundation
import Synchronization

/// How many downloads a long-running queue (`haul serve`) runs at once, changeable while it runs,
/// and the signal that wakes its idle workers when there may be something new to claim.
///
/// A run given one keeps going when the queue is empty: its workers wait here (for a wake-up, or
/// a few seconds, to notice items other processes added) until `DownloadQueue.stopAll()`.
public final class QueueConcurrency: Sendable {
    /// Workers a run starts; at most this many downloads run at once, whatever `limit` says.
    public let maximum: Int
    private let current: Atomic<Int>
    private let condition = NSConditionBox()

    /// `limit` downloads at once (at least 1), never more than `maximum` workers.
    public init(limit: Int, maximum: Int = 16) {
        self.maximum = max(1, maximum)
        current = Atomic(min(max(1, limit), max(1, maximum)))
    }

    /// Downloads at once, now.
    public var limit: Int { current.load(ordering: .relaxed) }

    /// Changes the limit: a raise starts claiming at once; a cut lets running downloads finish.
    public func setLimit(_ value: Int) {
        current.store(min(max(1, value), maximum), ordering: .relaxed)
        wake()
    }

    /// Wakes every idle worker (an item was added or resumed, the limit changed, the run stops).
    public func wake() {
        condition.broadcast()
    }

    /// Waits for a wake-up or `seconds`, whichever comes first.
    func idle(seconds: Double) {
        condition.wait(seconds: seconds)
    }
}

/// NSCondition with its generation counter, so a wake-up between a worker's check and its wait is
/// not lost. `@unchecked Sendable`: every field is used under the condition's own lock.
final class NSConditionBox: @unchecked Sendable {
    private let condition = NSCondition()
    private var generation = 0

    func broadcast() {
        condition.lock()
        generation += 1
        condition.broadcast()
        condition.unlock()
    }

    func wait(seconds: Double) {
        condition.lock()
        let seen = generation
        let deadline = Date(timeIntervalSinceNow: seconds)
        while generation == seen, condition.wait(until: deadline) {}
        condition.unlock()
    }
}
