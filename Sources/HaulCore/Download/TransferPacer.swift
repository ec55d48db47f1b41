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

/// A pacer in `TransferOptions`, equal by identity: two options are the same when they keep the
/// same limit.
struct PacerReference: Equatable, Sendable {
    let pacer: any TransferPacer

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.pacer === rhs.pacer }
}
