import Foundation
import HaulCore
import HaulEngine

/// Everything that describes one download.
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
    /// Timeouts, TLS, proxy and netrc settings for every connection of the download.
    public var transfer: TransferOptions
    /// Redirects followed at most; 10 by default.
    public var maxRedirects: Int
    /// Follow a redirect from https to http. Off by default: the rest of the request (headers,
    /// body) would travel unencrypted.
    public var allowsHTTPRedirect = false
    /// Seconds between durable checkpoints (data fdatasync'ed, then the record updated).
    /// Only a reboot or power cut can lose what came after the last one.
    public var checkpointInterval: Double
    /// How often progress events are published, in seconds.
    public var progressInterval: Double
    /// Verify (or only compute, when `expectedHex` is nil) a digest of the file. The hash runs as
    /// bytes arrive; its state is saved with each checkpoint, so a resume does not re-read the file.
    public var checksum: Checksum?
    /// Bytes that must stay free on the destination's file system beyond the download itself; when
    /// the server announces a length that does not fit, the download is refused before any body byte.
    /// Nil (the default) scales with the disk: 1% of the file system's size, at most 16 MiB
    /// (`SpaceCheck.defaultMargin(fileSystemSize:)`); 0 keeps nothing free.
    public var minFreeSpace: Int64?
    /// The largest file this download may produce: a larger announced length is refused before any
    /// body byte, and a body without a length is stopped when it grows past it (its bytes are kept).
    public var maxSize: Int64?
    /// Connections for one file: nil adapts (one, then two; while each addition raises the
    /// throughput by 15% or more the connections double, all the rest at once when the gain is
    /// near linear, up to 16; the first refusal, 503 or 429, stops it); 1 forces a single
    /// connection; up to 16. A host that refused an extra connection is not asked for more again
    /// in this download, after a pause or a relaunch either (its resume record keeps the count it
    /// took). Segmenting needs a server that serves ranges of a file with a validator and a known
    /// length; otherwise one connection is used.
    public var connections: Int?
    /// A speed limit, possibly shared with other downloads (pass the same limiter to each).
    public var rateLimiter: RateLimiter?
    /// A Netscape cookie file (curl's `-b FILE`) whose cookies the requests carry, each to the
    /// hosts and paths it belongs to. Read when the download starts.
    public var cookieFile: String?
    /// Where the cookies are written when the download ends, however it ends (curl's `-c FILE`):
    /// those of `cookieFile` and every `Set-Cookie` received, redirects included, merged into what
    /// the file holds by then. Written 0600: cookies are credentials.
    public var cookieJar: String?
    /// Verify a digest of the whole file that the server publishes (`Repr-Digest`, `Digest`,
    /// `x-goog-hash`, `x-amz-checksum-*`) when no `checksum` is given. On by default; a mismatch
    /// keeps the data as the partial and fails with `.checksum`.
    public var verifiesServerDigest = true
    /// Ask S3-style hosts for their stored checksum (`x-amz-checksum-mode: ENABLED`).
    public var asksS3Checksum = false
    /// Other URLs of the same file (mirrors): segments are spread over them, each proven to serve
    /// the same bytes as `url` before any of its bytes are kept (its length, and 64 KiB `url`
    /// already delivered compared byte for byte; then its own validator in `If-Range` on every
    /// request). A mirror that disagrees or keeps failing is dropped (a `.mirror` event says why).
    /// Used when the download is segmented (a whole file into a file, fetched with GET); each
    /// mirror's requests are built from its own URL alone, never with `headers` or `body`.
    public var mirrors: [URL] = []
    /// Use mirrors although no digest of the whole file is known (no `checksum`, none published
    /// by the server): their bytes are then proven only by the 64 KiB window each is probed
    /// with, and the completion says so. Off by default: without a digest, mirrors are not used.
    public var allowsUnverifiedMirrors = false
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
        self.transfer = transfer
        self.maxRedirects = maxRedirects
        self.checkpointInterval = checkpointInterval
        self.progressInterval = progressInterval
        self.checksum = checksum
    }
}
