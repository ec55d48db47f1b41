import Foundation
import Synchronization

/// The downloads whose files a call of this process (`haul.move`) holds locked now, and how many
/// such calls each has. A run of this process claimed meanwhile (another call put the download back
/// in the queue) waits for them to let go rather than fail on their locks: the move fails, as the
/// download now runs, and takes back what it did first.
final class MovesUnderWay: Sendable {
    private let counts = Mutex<[Int64: Int]>([:])

    /// Notes a call holding the files of `id` until `end`.
    func begin(_ id: Int64) {
        counts.withLock { $0[id, default: 0] += 1 }
    }

    func end(_ id: Int64) {
        counts.withLock { counts in
            let left = (counts[id] ?? 1) - 1
            counts[id] = left > 0 ? left : nil
        }
    }

    /// Whether a call holds the files of `id` now.
    func holds(_ id: Int64) -> Bool {
        counts.withLock { $0[id] != nil }
    }

    /// Waits while a call holds the files of `id`, `seconds` at most.
    func waitUntilNone(_ id: Int64, seconds: Double) {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1_000))
        while counts.withLock({ $0[id] != nil }), ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.02)
        }
    }
}
