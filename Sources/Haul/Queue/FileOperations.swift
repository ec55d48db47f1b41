import Foundation

/// One file operation (a move, a removal with files) at a time per download in this process: two
/// calls on one download (two browser tabs, a double click) take their turns, the second then
/// finding the download where the first left it (or gone), rather than finding the first one's
/// destination lock and being refused as if a download held it. One call waits at most: a third
/// is refused at once, so calls on one download never hold more than two of the threads that
/// answer calls.
///
/// `@unchecked Sendable`: `busy` and `calls` are only read and written with `condition` locked.
final class FileOperations: @unchecked Sendable {
    private let condition = NSCondition()
    /// Downloads an operation runs on.
    private var busy: Set<Int64> = []
    /// Calls running or waiting, per download (absent: none).
    private var calls: [Int64: Int] = [:]

    /// How long a call waits for the one before it on the same download. Each is bounded (a
    /// running download stops at its next checkpoint within 15 s; a lock is waited for 5 s).
    static let turnSeconds = 60.0

    /// Calls on one download at once, running or waiting.
    static let callsPerDownload = 2

    /// Runs `body` once no other operation on download `id` runs in this process.
    func inTurn<T>(_ id: Int64, _ body: () throws(DownloadError) -> T) throws(DownloadError) -> T {
        let deadline = Date().addingTimeInterval(Self.turnSeconds)
        condition.lock()
        guard calls[id, default: 0] < Self.callsPerDownload else {
            condition.unlock()
            throw DownloadError(.usage, "another call on download \(id) is under way and one more waits for it already; try again")
        }
        calls[id, default: 0] += 1
        while busy.contains(id) {
            guard condition.wait(until: deadline) else {
                leave(id)
                condition.unlock()
                throw DownloadError(.usage, "another call on download \(id) has been under way for \(Int(Self.turnSeconds)) s; try again")
            }
        }
        busy.insert(id)
        condition.unlock()
        defer {
            condition.lock()
            busy.remove(id)
            leave(id)
            condition.broadcast()
            condition.unlock()
        }
        return try body()
    }

    /// A call on `id` ends or gives up (with `condition` locked).
    private func leave(_ id: Int64) {
        let left = calls[id, default: 1] - 1
        calls[id] = left > 0 ? left : nil
    }
}
