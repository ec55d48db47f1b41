import Foundation

/// A speed limit a transfer keeps: the transport asks it, before handing the handler a body chunk,
/// how long to hold the chunk back, and the handler accounts for what it took (in Haul, the
/// `RateLimiter` the download holds). Asking takes nothing, so a chunk held back and offered again
/// is counted once, when it is taken.
///
/// A transport waits the way its threads allow: the libcurl event loop pauses that transfer alone
/// (`CURL_WRITEFUNC_PAUSE`) and resumes it when the time is up, so one limited download never holds
/// up another on the loop; a transfer on a thread of its own waits on it, in naps short enough
/// for a stop to be seen.
package protocol TransferPacer: AnyObject, Sendable {
    /// Seconds to hold the next chunk back; 0 when it may be taken now. Called on the transport's
    /// thread (the event loop's), so it must not block.
    func secondsBeforeNextChunk() -> Double

    /// The pace in bytes per second when a transfer starts (nil: none), so that the transport
    /// reads in chunks a fraction of a second's worth (`TransferPacing.receiveBuffer`): a chunk of
    /// many seconds' worth would be written at once and then nothing for seconds, and the figures
    /// would move in steps.
    var bytesPerSecondNow: Int64? { get }
}

extension TransferPacer {
    package var bytesPerSecondNow: Int64? { nil }
}

/// Tells the transports that a pace changed (a new limit): a transfer held back by it looks again
/// at once instead of sleeping out a wait worked out under the old limit.
package enum TransferPacing {
    /// Wakes every transport loop of the process that is running. Cheap; call it on every change.
    package static func paceChanged() {
        #if canImport(CCurl)
            CurlMultiLoop.wakeIfRunning()
        #endif
    }

    /// Waits on this thread until `pacer` lets the next chunk through or `shouldStop` says to end,
    /// in naps of at most 0.1 s; returns false when it ended for a stop. For transports whose
    /// callbacks run on a thread of the transfer's own (`perform`), where waiting holds up nothing else.
    static func waitOnThisThread(for pacer: any TransferPacer, shouldStop: () -> Bool) -> Bool {
        while true {
            let wait = pacer.secondsBeforeNextChunk()
            if wait < minimumWait { return true }
            if shouldStop() { return false }
            Thread.sleep(forTimeInterval: min(wait, 0.1))
        }
    }

    /// The receive buffer of a transfer that starts at `pace` bytes per second (nil: none) on a
    /// transport whose buffer is `standard` bytes: a quarter of a second's worth, at least 1 KiB
    /// (libcurl's least) and at most `standard`. libcurl cannot change it while a transfer runs:
    /// a transfer whose limit changed four times or more over (`readsOutOfStep`) is ended by its
    /// handler and continued by range, reading in the new grain.
    package static func receiveBuffer(standard: Int = standardReceiveBuffer, pace: Int64?) -> Int {
        guard let pace, pace > 0 else { return standard }
        return Int(min(Int64(standard), max(1024, pace / 4)))
    }

    /// libcurl's receive buffer with no limit: larger than its default 16 KiB, so a fast transfer
    /// reads its socket in few calls.
    package static let standardReceiveBuffer = 256 * 1024

    /// Whether a transfer that reads `startedWith` bytes at a time is out of step with a pace
    /// that wants `now`: four times or more either way (1 KiB reads with no limit any more cost
    /// several times the CPU; 256 KiB chunks at 8 KiB/s move the figures every 32 s).
    package static func readsOutOfStep(startedWith: Int, now: Int) -> Bool {
        max(startedWith, now) >= 4 * min(startedWith, now)
    }

    /// Waits shorter than this are not waited for: the clock's and the poll's grain.
    static let minimumWait = 0.001
}

/// A pacer in `TransferOptions`, equal by identity: two options are the same when they keep the
/// same limit.
struct PacerReference: Equatable, Sendable {
    let pacer: any TransferPacer

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.pacer === rhs.pacer }
}
