import Foundation
import HaulCore
import Synchronization

/// A speed limit shared by every transfer that holds it: all the downloads of a batch (and, later,
/// all the connections of one download) draw from one budget. A transfer that gets ahead waits
/// inside its write callback, so the kernel's flow control slows the sender.
public final class RateLimiter: Sendable {
    private let bucket: Mutex<TokenBucket>
    private let start = ContinuousClock.now

    /// A limit of `bytesPerSecond` across all its users.
    public init(bytesPerSecond: Int64) {
        bucket = Mutex(TokenBucket(rate: Double(bytesPerSecond)))
    }

    public var bytesPerSecond: Double { bucket.withLock { $0.rate } }

    /// Accounts for `bytes` and waits until they fit the limit, in short naps so a pause or cancel
    /// (`shouldStop`) is noticed quickly.
    func take(_ bytes: Int, shouldStop: () -> Bool) {
        let elapsed = ContinuousClock.now - start
        let now = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        var wait = bucket.withLock { $0.take(bytes, now: now) }
        while wait > 0, !shouldStop() {
            let nap = min(wait, 0.1)
            Thread.sleep(forTimeInterval: nap)
            wait -= nap
        }
    }
}
