import Foundation
import HaulCore
import HaulStore

// A move cut short (a crash between its first new name and its last old one): finished by whoever
// opens the download next, so each file keeps one name, the one the store names.
extension DownloadQueue {
    /// Leaves one name per file of `item` when a move of it was cut short (its intent is still in
    /// the store): the new names while the store names the old place, else the old ones; each
    /// only while it names the very file the other name does. Then the intent is cleared. Nothing
    /// is done while another process holds either destination (a move still under way there):
    /// `heldElsewhere`. `waiting`: the locks are asked again for a few seconds (a move under way
    /// in this process ends, and clears its intent, before it lets them go). `resuming`: a
    /// download the move had paused (it ran or waited) goes back to the queue after. Returns the
    /// item as stored now.
    @discardableResult
    func settleLeftMove(_ item: StoredDownload, waiting: Bool = false, resuming: Bool = false) throws(DownloadError) -> StoredDownload {
        guard let intent = item.moveIntent else { return item }
        var locks: [DestinationLock] = []
        defer { for lock in locks { lock.release() } }
        let deadline = ContinuousClock.now + .seconds(5)
        for lock in intent.locks where Self.directoryMayHoldLock(lock) {
            while true {
                do throws(OutputError) {
                    locks.append(try TaskFiles.lock(lock))
                    break
                } catch {
                    guard waiting, error.kind == .heldElsewhere, ContinuousClock.now < deadline else { throw DownloadError(error) }
                    Thread.sleep(forTimeInterval: 0.05)
                }
            }
        }
        let current = try storedItem(item.id)
        guard let left = current.moveIntent, left == intent else { return current }
        let (request, _) = try placement(of: current)
        TaskFiles.finish(left, of: request.outputRequest)
        try storeCall { try $0.clearMoveIntent(item.id, ifStill: left) }
        if resuming, left.resumes, current.state == .paused { try resume(item.id) }
        return try storedItem(item.id)
    }

    /// Whether the directory of `lock`'s file is there: one deleted since the crash (the user
    /// cleaned up) holds no lock file, so no live process holds that lock, and no name of the move
    /// is in it; its lock is not asked for (it cannot be made there).
    static func directoryMayHoldLock(_ lock: MoveIntent.Lock) -> Bool {
        var status = stat()
        guard stat(AbsolutePath.directory(of: lock.path), &status) != 0 else { return true }
        return errno != ENOENT && errno != ENOTDIR
    }

    /// `settleLeftMove` of every download a move was cut short of (a run's start: `haul serve`
    /// started again after a crash), one the move paused put back in the queue. One whose
    /// destination another process holds is left to it.
    func settleLeftMoves(_ items: [StoredDownload]) {
        for item in items where item.moveIntent != nil { _ = try? settleLeftMove(item, resuming: true) }
    }
}
