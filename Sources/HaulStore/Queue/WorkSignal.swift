import Foundation

/// Timed waits that a wake-up ends early, for every waiter at once. A wake-up that comes between
/// a worker's empty claim and its wait is not kept: the wait's deadline bounds what it costs.
///
/// `@unchecked Sendable`: `generation` is only read and written while `condition` is locked.
final class WorkSignal: @unchecked Sendable {
    private let condition = NSCondition()
    private var generation: UInt64 = 0

    func wait(seconds: Double) {
        condition.lock()
        defer { condition.unlock() }
        let start = generation
        let deadline = Date().addingTimeInterval(seconds)
        while generation == start, condition.wait(until: deadline) {}
    }

    func wake() {
        condition.lock()
        generation &+= 1
        condition.broadcast()
        condition.unlock()
    }
}
