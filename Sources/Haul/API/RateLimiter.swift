import Foundation
import HaulCore
import HaulEngine
import Synchronization

/// A speed limit shared by every transfer that holds it: all the downloads of a batch and all the
/// connections of one download draw from one budget. Each transfer accounts for the bytes it took,
/// and the engine asks, before the next chunk, how long to hold it back: on
/// the event loop that transfer alone is paused, so the kernel's flow control slows the sender
/// and no other transfer waits.
///
/// A limiter may sit within another (one download's limit within the run's): a transfer then
/// waits for both. The limit can change while transfers hold it (`haul serve`'s changeOption); a
/// transfer held back looks again at once.
public final class RateLimiter: TransferPacer {
    /// The limit as given (0: none of its own) and its bucket (nil: none), changed together. The
    /// bucket counts in `Double`s; the limit is kept as the integer it was given, so reading it
    /// back is never a conversion from a `Double` (which rounds `Int64.max` to 2^63, a value no
    /// `Int64` holds).
    private let own: Mutex<(limit: Int64, bucket: TokenBucket?)>
    private let enclosing: RateLimiter?
    private let start = ContinuousClock.now

    /// A limit of `bytesPerSecond` across all its users (0 or less: none of its own), within
    /// `enclosing` when given. Any `Int64` is taken and kept exactly; what a person or a client
    /// may ask for is bounded where it enters (`SpeedLimit.maximumBytesPerSecond`).
    public init(bytesPerSecond: Int64, within enclosing: RateLimiter? = nil) {
        own = Mutex(Self.limit(bytesPerSecond))
        self.enclosing = enclosing
    }

    /// Its own limit in bytes per second, exactly as given; 0 when it has none.
    public var bytesPerSecond: Int64 { own.withLock { $0.limit } }

    /// Whether it limits at all now: a limit of its own or an enclosing one. (In `haul serve` every
    /// download holds a limiter, most of them without a limit.)
    public var isLimiting: Bool { bytesPerSecond > 0 || enclosing?.isLimiting == true }

    /// The pace a transfer holding it is kept to now: the lowest of its own limit and the
    /// enclosing ones; nil when none limits.
    public var bytesPerSecondNow: Int64? {
        let own = bytesPerSecond
        let enclosing = enclosing?.bytesPerSecondNow
        guard own > 0 else { return enclosing }
        return min(own, enclosing ?? own)
    }

    /// Changes its own limit (0 or less: none) for every transfer holding it, from the next chunk;
    /// a transfer held back by the old limit is woken to look again.
    public func setLimit(bytesPerSecond: Int64) {
        own.withLock { $0 = Self.limit(bytesPerSecond) }
        TransferPacing.paceChanged()
    }

    private static func limit(_ bytesPerSecond: Int64) -> (limit: Int64, bucket: TokenBucket?) {
        bytesPerSecond > 0 ? (bytesPerSecond, TokenBucket(rate: Double(bytesPerSecond))) : (0, nil)
    }

    /// Seconds since this limiter was made: the buckets' clock.
    private var now: Double {
        (ContinuousClock.now - start).inSeconds
    }

    /// Accounts for `bytes` a transfer took, here and in the enclosing limit. Never waits: the
    /// transport holds the next chunk back (`secondsBeforeNextChunk`).
    func account(_ bytes: Int) {
        let now = now
        _ = own.withLock { $0.bucket?.take(bytes, now: now) }
        enclosing?.account(bytes)
    }

    /// How long until the debt of this limit and of the enclosing one is paid; takes nothing.
    package func secondsBeforeNextChunk() -> Double {
        let now = now
        let wait = own.withLock { $0.bucket?.wait(now: now) ?? 0 }
        return max(wait, enclosing?.secondsBeforeNextChunk() ?? 0)
    }
}
