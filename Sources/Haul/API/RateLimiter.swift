import Foundation
import HaulCore
import Synchronization

/// A speed limit shared by every transfer that holds it: all the downloads of a batch (and, later,
/// all the connections of one download) draw from one budget. A transfer that gets ahead waits
/// inside its write callback, so the kernel's flow control slows the sender.
///
/// A limiter may sit within another (one download's limit within the run's): a transfer then
/// waits for both. The limit can change while transfers hold it (`haul serve`'s changeOption).
public final class RateLimiter: Sendable {
    /// nil: no limit of its own (only the enclosing one's, if any).
    private let bucket: Mutex<TokenBucket?>
    private let enclosing: RateLimiter?
    private let start = ContinuousClock.now

    /// A limit of `bytesPerSecond` across all its users (0 or less: none of its own), within
    /// `enclosing` when given.
    public init(bytesPerSecond: Int64, within enclosing: RateLimiter? = nil) {
        bucket = Mutex(Self.bucket(bytesPerSecond))
        self.enclosing = enclosing
    }

    /// Its own limit in bytes per second; 0 when it has none.
    public var bytesPerSecond: Double { bucket.withLock { $0?.rate ?? 0 } }

    /// Whether it limits at all now: a limit of its own or an enclosing one. (In `haul serve` every
    /// download holds a limiter, most of them without a limit.)
    public var isLimiting: Bool { bytesPerSecond > 0 || enclosing?.isLimiting == true }

    /// Changes its own limit (0 or less: none) for every transfer holding it, from the next write.
    public func setLimit(bytesPerSecond: Int64) {
        bucket.withLock { $0 = Self.bucket(bytesPerSecond) }
    }

    private static func bucket(_ bytesPerSecond: Int64) -> TokenBucket? {
        bytesPerSecond > 0 ? TokenBucket(rate: Double(bytesPerSecond)) : nil
    }

    /// Accounts for `bytes` and waits until they fit the limit (and the enclosing one), in short
    /// naps so a pause or cancel (`shouldStop`) is noticed quickly.
    func take(_ bytes: Int, shouldStop: () -> Bool) {
        let elapsed = ContinuousClock.now - start
        let now = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        var wait = bucket.withLock { $0?.take(bytes, now: now) ?? 0 }
        while wait > 0, !shouldStop() {
            let nap = min(wait, 0.1)
            Thread.sleep(forTimeInterval: nap)
            wait -= nap
        }
        enclosing?.take(bytes, shouldStop: shouldStop)
    }
}
