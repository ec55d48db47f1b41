import Foundation
import HaulCore

/// Something that happened to a download. One stream of these per download, ending with
/// `.completed`, `.failed` or `.cancelled`.
public enum DownloadEvent: Sendable, Equatable {
    /// The download began (or began again after a pause).
    case started(DownloadStarted)
    /// A response was accepted and its body is being written.
    case response(ResponseInfo)
    /// Bytes are arriving.
    case progress(DownloadProgress)
    /// The bytes on disk were given up and the download restarted from its first byte.
    case restarted(RestartReason)
    /// A transient failure; the next attempt comes after `delay` seconds and resumes from what is on disk.
    case retrying(RetryInfo)
    /// A mirror was proven to serve the same file and now takes segments, or was dropped.
    case mirror(MirrorNote)
    /// The transfer stopped; the partial file and its record are kept for `resume()` or a later run.
    case paused(DownloadProgress)
    /// The file is complete, verified and in place.
    case completed(DownloadCompletion)
    /// The download failed; the bytes on disk are kept.
    case failed(DownloadError)
    /// The download was cancelled.
    case cancelled

    /// Whether no event follows this one.
    public var isTerminal: Bool {
        switch self {
        case .completed, .failed, .cancelled: return true
        default: return false
        }
    }
}

/// What `DownloadEvent.started` tells: where the run begins.
public struct DownloadStarted: Sendable, Equatable {
    /// The URL asked for (the one the run sends its first request to).
    public let url: URL
    /// The destination path, when already known (downloads into a directory learn it from the response).
    public let destination: String?
    /// Bytes already on disk that this run continues from.
    public let resumingFrom: Int64
    /// How the bytes on disk are being treated, when it is worth saying (a partial fetched from
    /// another URL is continued only once the server's answer proves it the same file).
    public var note: String?

    /// The start of a run of `url`, continuing from `resumingFrom` bytes on disk.
    public init(url: URL, destination: String?, resumingFrom: Int64, note: String? = nil) {
        self.url = url
        self.destination = destination
        self.resumingFrom = resumingFrom
        self.note = note
    }
}

/// What `DownloadEvent.response` tells: the response whose body is written.
public struct ResponseInfo: Sendable, Equatable {
    /// The HTTP status (200 or 206).
    public let status: Int
    /// The URL that answered, after redirects.
    public let finalURL: URL
    /// Bytes the finished file will have, when known.
    public let totalBytes: Int64?
    /// Bytes kept from before (0 for a fresh start).
    public let resumedFrom: Int64
    /// The destination path.
    public let destination: String
    /// Worth saying about this response (e.g. the name was changed to stay unique).
    public var note: String?

    /// A response of `status` from `finalURL`; see each property.
    public init(status: Int, finalURL: URL, totalBytes: Int64?, resumedFrom: Int64, destination: String, note: String? = nil) {
        self.status = status
        self.finalURL = finalURL
        self.totalBytes = totalBytes
        self.resumedFrom = resumedFrom
        self.destination = destination
        self.note = note
    }
}

/// Where a download stands: bytes on disk, the total when known, speed and time left.
public struct DownloadProgress: Sendable, Equatable {
    /// Bytes of the file on disk so far (including those from earlier runs).
    public let bytes: Int64
    /// Bytes the finished file will have; nil when the server did not say.
    public let totalBytes: Int64?
    /// Current speed in bytes per second, measured over the last seconds (`ProgressMeter`): 0, that
    /// is none yet, until a second of the transfer has been measured (over less, the bytes waiting
    /// in the socket when the body started give absurd figures); a run's last report measures its
    /// whole run, however short.
    public let bytesPerSecond: Double
    /// Seconds left at the current speed; nil when unknown.
    public let secondsLeft: Double?
    /// For a segmented download, each range of the file: `[begin, next)` on disk, up to `end`
    /// (the first is the sequential prefix). A range is not a connection: a finished or refused
    /// one stays listed; `connections` counts the connections.
    package var segments: [Segment]?
    /// The connections fetching this download's bytes when the report was made: 1 for a download
    /// over one connection; for a segmented one its first connection (until it reaches the part
    /// the others fetch) and the extra connections running, a refused or finished one no longer
    /// counted; 0 in a pause's figures and in the last report of a run.
    public var connections: Int = 1

    /// Progress of `bytes` of `totalBytes` (nil: unknown) at `bytesPerSecond`, `secondsLeft` to go.
    public init(bytes: Int64, totalBytes: Int64?, bytesPerSecond: Double, secondsLeft: Double?) {
        self.bytes = bytes
        self.totalBytes = totalBytes
        self.bytesPerSecond = bytesPerSecond
        self.secondsLeft = secondsLeft
    }

    /// Fraction done in 0...1, when the total is known.
    public var fraction: Double? {
        guard let totalBytes, totalBytes > 0 else { return totalBytes == 0 ? 1 : nil }
        return min(1, Double(bytes) / Double(totalBytes))
    }
}

/// What became of one mirror of a segmented download (`DownloadRequest.mirrors`).
public struct MirrorNote: Sendable, Equatable {
    /// What became of the mirror.
    public enum Change: String, Sendable {
        /// Its length and a window of its bytes matched the primary's: it takes segments.
        case admitted
        /// It disagreed with the primary or kept failing: nothing it sent is kept, its ranges go
        /// to the other sources, and it is not asked again in this run.
        case dropped
    }

    /// The mirror as given (show it through `Redaction`: it may hold a password).
    public let url: URL
    /// Admitted or dropped.
    public let change: Change
    /// How it was proven, or why it was dropped.
    public let reason: String

    /// A note that the mirror `url` was admitted or dropped, and why.
    public init(url: URL, change: Change, reason: String) {
        self.url = url
        self.change = change
        self.reason = reason
    }

    /// One line for a person, the mirror's password shown as `***`.
    public var message: String {
        "mirror \(Redaction.url(url)) \(change.rawValue): \(reason)"
    }
}

/// What `DownloadEvent.retrying` tells: which retry comes, when, and why.
public struct RetryInfo: Sendable, Equatable {
    /// 1 for the first retry.
    public let attempt: Int
    /// Retries allowed in all (`RetryPolicy.maxRetries`; for a fresh URL after 401/403/410, the refreshes allowed).
    public let maxRetries: Int
    /// Seconds until the retry (0 for a fresh URL, taken at once).
    public let delay: Double
    /// The failure that caused it, for a person.
    public let reason: String
}

/// What `DownloadEvent.completed` and `Download.result()` return: where the complete file is, its
/// size, and what this run (the last `resume()` or process that finished it) did. A resumed
/// download's earlier runs are not in `bytesTransferred` or `seconds`: `resumedFrom` says how much
/// of the file they had left on disk.
public struct DownloadCompletion: Sendable, Equatable {
    /// Where the file is.
    public let path: String
    /// The file's size in bytes.
    public let bytes: Int64
    /// Bytes this run fetched from the network (body bytes, overlap checks and restarts included).
    public let bytesTransferred: Int64
    /// Wall time of this run in seconds.
    public let seconds: Double
    /// Bytes of the file already on disk when this run started and kept (0 for a download done in
    /// one run, and for a run that restarted: the bytes it gave up are in
    /// `RestartReason.discardedBytes`, not here).
    public var resumedFrom: Int64 = 0
    /// The URL that answered last.
    public let finalURL: URL
    /// `algorithm:hex` of the file, when a checksum was asked for (and matched, if one was expected).
    public let digest: String?
    /// When mirrors served segments: which they were and what proved their bytes (the whole
    /// file's digest, or only each one's 64 KiB probe); nil when no mirror served.
    public var mirrorProof: String? = nil
    /// The file was already complete in place when this run started: an earlier run of the same
    /// request (URL, method and range) finished it, and it is still exactly the file that run put
    /// there (device, inode, size and modification time). Nothing was fetched, and no request was
    /// made, except into a directory under a name the server gives: then one request's head named
    /// the file, and its transfer stopped there.
    public var alreadyComplete: Bool = false

    /// This run's speed: `bytesTransferred` over `seconds` (0 for a run of no measurable time).
    public var bytesPerSecond: Double {
        seconds > 0 ? Double(bytesTransferred) / seconds : 0
    }
}
