import Foundation

/// One file operation (a move, a removal with files) at a time per download in this process: two
/// calls on one download (two browser tabs, a double click) take their turns, the second then
/// finding the download where the first left it (or gone), rather than finding the first one's
/// destination lock and being refused as if a download held it.
///
/// `@unchecked Sendable`: `busy` is only read and written with `condition` locked.
final class FileOperations: @unchecked Sendable {
    private let condition = NSCondition()
    private var busy: Set<Int64> = []

    /// How long a call waits for the one before it on the same download. Each is bounded (a
    /// running download stops at its next checkpoint within 15 s; a lock is waited for 5 s).
    static let turnSeconds = 60.0

    /// Runs `body` once no other operation on download `id` runs in this process.
    func inTurn<T>(_ id: Int64, _ body: () throws(DownloadError) -> T) throws(DownloadError) -> T {
        let deadline = Date().addingTimeInterval(Self.turnSeconds)
        condition.lock()
        while busy.contains(id) {
            guard condition.wait(until: deadline) else {
                condition.unlock()
                throw DownloadError(.usage, "another call on download \(id) has been under way for \(Int(Self.turnSeconds)) s; try again")
            }
        }
        busy.insert(id)
        condition.unlock()
        defer {
            condition.lock()
            busy.remove(id)
            condition.broadcast()
            condition.unlock()
        }
        return try body()
    }
}
