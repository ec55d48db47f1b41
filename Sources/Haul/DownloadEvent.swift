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

public struct DownloadStarted: Sendable, Equatable {
    public let url: URL
    /// The destination path, when already known (downloads into a directory learn it from the response).
    public let destination: String?
    /// Bytes already on disk that this run continues from.
    public let resumingFrom: Int64
    /// How the bytes on disk are being treated, when it is worth saying (a partial fetched from
    /// another URL is continued only once the server's answer proves it the same file).
    public var note: String?

    public init(url: URL, destination: String?, resumingFrom: Int64, note: String? = nil) {
        self.url = url
        self.destination = destination
        self.resumingFrom = resumingFrom
        self.note = note
    }
}

public struct ResponseInfo: Sendable, Equatable {
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

    public init(status: Int, finalURL: URL, totalBytes: Int64?, resumedFrom: Int64, destination: String, note: String? = nil) {
        self.status = status
        self.finalURL = finalURL
        self.totalBytes = totalBytes
        self.resumedFrom = resumedFrom
        self.destination = destination
        self.note = note
    }
}

public struct DownloadProgress: Sendable, Equatable {
    /// Bytes of the file on disk so far (including those from earlier runs).
    public let bytes: Int64
    /// Bytes the finished file will have; nil when the server did not say.
    public let totalBytes: Int64?
    /// Current speed in bytes per second.
    public let bytesPerSecond: Double
    /// Seconds left at the current speed; nil when unknown.
    public let secondsLeft: Double?
    /// For a segmented download, each connection's range: `[begin, next)` on disk, up to `end`
    /// (the first is the sequential prefix).
    public var segments: [Segment]?

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
    public enum Change: String, Sendable {
        /// Its length and a window of its bytes matched the primary's: it takes segments.
        case admitted
        /// It disagreed with the primary or kept failing: nothing it sent is kept, its ranges go
        /// to the other sources, and it is not asked again in this run.
        case dropped
    }

    /// The mirror as given (show it through `Redaction`: it may hold a password).
    public let url: URL
    public let change: Change
    /// How it was proven, or why it was dropped.
    public let reason: String

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

public struct RetryInfo: Sendable, Equatable {
    /// 1 for the first retry.
    public let attempt: Int
    public let maxRetries: Int
    public let delay: Double
    public let reason: String
}

public struct DownloadCompletion: Sendable, Equatable {
    /// Where the file is.
    public let path: String
    /// Its length in bytes.
    public let bytes: Int64
    /// Bytes this run fetched from the network (body bytes, overlap checks and restarts included).
    public let bytesTransferred: Int64
    /// Wall time of this run in seconds.
    public let seconds: Double
    /// The URL that answered last.
    public let finalURL: URL
    /// `algorithm:hex` of the file, when a checksum was asked for (and matched, if one was expected).
    public let digest: String?
}
