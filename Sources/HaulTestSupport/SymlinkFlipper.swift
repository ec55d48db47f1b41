import Foundation

/// Swaps `directory/sub` between a real directory and a symlink to `outside`, over and over,
/// on a thread of its own, until stopped: a hostile process racing the server's checks.
package final class SymlinkFlipper: @unchecked Sendable {
    // `stopped` and `held` are guarded by `lock`; the paths never change.
    private let lock = NSLock()
    private var stopped = false
    private var held = false
    private let done = DispatchSemaphore(value: 0)

    package init(directory: String, outside: String) {
        let sub = directory + "/sub"
        let aside = directory + "/sub.real"
        Thread.detachNewThread { [self] in
            while !lock.withLock({ stopped }) {
                if lock.withLock({ held }) {
                    usleep(500)
                    continue
                }
                if rename(sub, aside) == 0 {
                    _ = symlink(outside, sub)
                    usleep(500)
                    unlink(sub)
                    rename(aside, sub)
                }
                usleep(500)
            }
            done.signal()
        }
    }

    package func stop() {
        lock.withLock { stopped = true }
        done.wait()
    }

    /// Holds the flipping (dl/sub a real directory again within a millisecond) or lets it go on.
    package func hold(_ holding: Bool) {
        lock.withLock { held = holding }
        if holding { usleep(3_000) }
    }
}
