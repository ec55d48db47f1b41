import Foundation
import HaulCore
import HaulEngine

/// Everything that describes one download: what to fetch and where to put it, and its
/// `options`, whose properties it reads and writes as its own (`request.checksum`).
@dynamicMemberLookup
public struct DownloadRequest: Sendable {
    /// The http or https URL to download.
    public var url: URL
    /// The HTTP method; `GET` by default.
    public var method: String
    /// Header fields to send. `Range` and `If-Range` are Haul's own and are replaced; without an
    /// `Accept-Encoding` of yours, Haul sends `identity` so that byte offsets mean something.
    public var headers: HTTPHeaders
    /// The request body; nil for none. A 303 redirect drops it (the next request is a GET).
    public var body: [UInt8]?
    /// Where the file goes.
    public var destination: Destination
    /// The whole resource, or one byte range of it.
    public var target: DownloadTarget
    /// What to do when a complete file is already at the destination; `.refuse` by default.
    public var existingFile: ExistingFilePolicy
    /// How often, and after how long, transient failures are retried.
    public var retry: RetryPolicy
    /// Seconds between durable checkpoints (data fdatasync'ed, then the record updated).
    /// Only a reboot or power cut can lose what came after the last one.
    public var checkpointInterval: Double
    /// How often progress events are published, in seconds.
    public var progressInterval: Double
    /// A speed limit, possibly shared with other downloads (pass the same limiter to each); the
    /// download's own limit, if any, is `options.bytesPerSecond`. A live object: a queued
    /// download keeps its own limit, never the limiter.
    public var rateLimiter: RateLimiter?
    /// What the download checks and how it connects (checksum, size limits, TLS, proxy,
    /// redirects, connections, mirrors...): one value, kept whole by the queue. Its properties
    /// read and write as the request's own (`request.maxRedirects`, `request.transfer.proxy`).
    public var options = DownloadOptions()
    /// Supplies a fresh URL when the server answers 401, 403 or 410 to a download in progress
    /// (signed URLs expire), given the URL that failed and the status; nil gives up. It is async:
    /// an app's token refresh (on the main actor, over the network) is awaited, the download
    /// waiting on its own thread, never on one of the cooperative pool. The resume through the new
    /// URL proceeds only if the validators still match (`If-Range`); a changed file restarts from
    /// byte 0 as usual.
    public var urlRefresher: (@Sendable (URL, Int) async -> URL?)?

    /// A request for `url` into `destination`; the other settings keep their defaults unless given
    /// (the properties without a parameter here are set afterwards).
    public init(
        url: URL,
        destination: Destination,
        method: String = "GET",
        headers: HTTPHeaders = HTTPHeaders(),
        body: [UInt8]? = nil,
        target: DownloadTarget = .whole,
        existingFile: ExistingFilePolicy = .refuse,
        retry: RetryPolicy = RetryPolicy(),
        transfer: TransferOptions = TransferOptions(),
        maxRedirects: Int = 10,
        checkpointInterval: Double = 10,
        progressInterval: Double = 0.25,
        checksum: Checksum? = nil
    ) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.destination = destination
        self.target = target
        self.existingFile = existingFile
        self.retry = retry
        self.checkpointInterval = checkpointInterval
        self.progressInterval = progressInterval
        options.transfer = transfer
        options.maxRedirects = maxRedirects
        options.checksum = checksum
    }

    /// An option of `options`, read and written as the request's own.
    public subscript<Value>(dynamicMember option: WritableKeyPath<DownloadOptions, Value>) -> Value {
        get { options[keyPath: option] }
        set { options[keyPath: option] = newValue }
    }
}
