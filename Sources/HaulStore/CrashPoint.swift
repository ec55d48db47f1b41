import Foundation

/// Named durability steps at which a test can make the process die as by `kill -9`, to prove that
/// the next run completes bit-exact from whatever the step left on disk.
///
/// Test-only switch: the environment variable `HAUL_TEST_CRASH_AT=STEP` or `STEP:N` (the N-th time
/// the step is reached, counting from 1) sends SIGKILL to the process itself right after (or, for
/// `before-…`, right before) that step. Unset, `reach` costs one load of a constant.
package enum CrashPoint: String, Sendable, CaseIterable {
    /// A body write (the sequential connection's or a segment's) returned.
    case afterBodyWrite = "after-body-write"
    /// fdatasync of the partial file returned.
    case afterDataSync = "after-data-sync"
    /// A resume record was saved (durably or not), in a file or in the queue's database.
    case afterRecordSave = "after-record-save"
    /// The finished partial was renamed to its final name.
    case afterRename = "after-rename"
    /// The directory holding the final name was synced.
    case afterDirectorySync = "after-directory-sync"
    /// The record of a finished download is about to be removed.
    case beforeRecordRemove = "before-record-remove"
    /// A segmented download's connections all ended and their progress was recorded; nothing is
    /// put in place yet.
    case afterSegmentsJoined = "after-segments-joined"
    /// The queue's database committed one transaction (the next one has not started).
    case betweenQueueCommits = "between-queue-commits"
    /// A move (`haul.move`) gave one file its new name (a hard link; the old name stays).
    case afterMoveLink = "after-move-link"
    /// A move's new place was recorded in the store (the old names are still there).
    case afterMoveRelocate = "after-move-relocate"
    /// A move removed one leftover name (an old one, or a new one when a move is undone).
    case afterMoveUnlink = "after-move-unlink"

    private struct Armed: Sendable {
        let point: CrashPoint
        let occurrence: Int
    }

    private static let armed: Armed? = {
        guard let value = ProcessInfo.processInfo.environment["HAUL_TEST_CRASH_AT"], !value.isEmpty else { return nil }
        let parts = value.split(separator: ":", maxSplits: 1)
        guard let point = CrashPoint(rawValue: String(parts[0])) else { return nil }
        let occurrence = parts.count > 1 ? Int(parts[1]) ?? 1 : 1
        return Armed(point: point, occurrence: max(1, occurrence))
    }()

    private static let counter = Counter()

    /// Dies here if the test switch names this step and this is its N-th occurrence.
    @inline(__always)
    package static func reach(_ point: CrashPoint) {
        guard let armed, armed.point == point else { return }
        if counter.increment() == armed.occurrence {
            kill(getpid(), SIGKILL)
        }
    }

    /// Occurrences so far; steps are reached from several threads (segments).
    private final class Counter: @unchecked Sendable {
        // @unchecked: `lock` guards `count`.
        private let lock = NSLock()
        private var count = 0

        func increment() -> Int {
            lock.lock()
            defer { lock.unlock() }
            count += 1
            return count
        }
    }
}
