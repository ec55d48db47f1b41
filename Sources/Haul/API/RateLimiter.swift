import Foundation
import HaulCore
import HaulEngine
import Synchronization

/// A speed limit shared by every transfer that holds it: all the downloads of a batch and all the
/// connections of one download draw from one budget. Each transfer accounts for the bytes it took,
/// and its transport asks, before the next chunk, how long to hold it back (`TransferPacer`): on
/// the event loop that transfer alone is paused, so the kernel's flow control slows the sender
/// and no other transfer waits.
///
/// A limiter may sit within another (one download's limit within the run's): a transfer then
/// waits for both. The limit can change while transfers hold it (`haul serve`'s changeOption); a
/// transfer held back looks again at once.
public final class RateLimiter: TransferPacer {
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

    /// Changes its own limit (0 or less: none) for every transfer holding it, from the next chunk;
    /// a transfer held back by the old limit is woken to look again.
    public func setLimit(bytesPerSecond: Int64) {
        bucket.withLock { $0 = Self.bucket(bytesPerSecond) }
        TransferPacing.paceChanged()
    }

    private static func bucket(_ bytesPerSecond: Int64) -> TokenBucket? {
        bytesPerSecond > 0 ? TokenBucket(rate: Double(bytesPerSecond)) : nil
    }

    /// Seconds since this limiter was made: the buckets' clock.
    private var now: Double {
        (ContinuousClock.now - start).inSeconds
    }

    /// Accounts for `bytes` a transfer took, here and in the enclosing limit. Never waits: the
    /// transport holds the next chunk back (`secondsBeforeNextChunk`).
    func account(_ bytes: Int) {
        let now = now
        _ = bucket.withLock { $0?.take(bytes, now: now) }
        enclosing?.account(bytes)
    }

    /// How long until the debt of this limit and of the enclosing one is paid; takes nothing.
    public func secondsBeforeNextChunk() -> Double {
        let now = now
        let own = bucket.withLock { $0?.wait(now: now) ?? 0 }
        return max(own, enclosing?.secondsBeforeNextChunk() ?? 0)
    }
}
