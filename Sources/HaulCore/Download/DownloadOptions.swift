import Foundation

/// What one download checks and how it connects, beyond its URL, method, headers, body,
/// destination, range and existing-file policy: one value, which `DownloadRequest` holds as
/// `options` and a queued download keeps whole (the queue's `options` column, written and read as
/// this type's JSON), so a download run later behaves exactly as asked. How a run behaves
/// (retries, timeouts, a shared speed limit) is the run's and is not kept.
///
/// Adding an option is adding it here (a property, its key, how it is read and written), where
/// it takes effect, and where a front end sets it; the queue stores it with no change. The
/// transfer's settings read and write as its own (`options.proxy`), as they are stored.
@dynamicMemberLookup
public struct DownloadOptions: Sendable, Equatable {
    /// The connection settings: TLS, proxy, netrc, HTTP/2 (kept with a queued download), and the
    /// timeouts (a run's: never kept).
    public var transfer = TransferOptions()
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
    /// Verify a digest of the whole file that the server publishes (`Repr-Digest`, `Digest`,
    /// `x-goog-hash`, `x-amz-checksum-*`) when no `checksum` is given. On by default; a mismatch
    /// keeps the data as the partial and fails with `.checksum`.
    public var verifiesServerDigest = true
    /// Ask S3-style hosts for their stored checksum (`x-amz-checksum-mode: ENABLED`).
    public var asksS3Checksum = false
    /// Connections for one file: nil adapts (one, then two; while each addition raises the
    /// throughput by 15% or more the connections double, all the rest at once when the gain is
    /// near linear, up to 16; the first refusal, 503 or 429, stops it); 1 forces a single
    /// connection; up to 16. A host that refused an extra connection is not asked for more again
    /// in this download, after a pause or a relaunch either (its resume record keeps the count it
    /// took). Segmenting needs a server that serves ranges of a file with a validator and a known
    /// length; otherwise one connection is used. In a queue run, nil takes the run's count.
    public var connections: Int?
    /// This download's own speed limit in bytes per second (nil: none of its own); a
    /// `DownloadRequest.rateLimiter`, possibly shared with other downloads, applies as well.
    public var bytesPerSecond: Int64?
    /// Follow a redirect from https to http. Off by default: the rest of the request (headers,
    /// body) would travel unencrypted.
    public var allowsHTTPRedirect = false
    /// Redirects followed at most; 10 by default.
    public var maxRedirects = 10
    /// A Netscape cookie file (curl's `-b FILE`) whose cookies the requests carry, each to the
    /// hosts and paths it belongs to. Read when the download starts.
    public var cookieFile: String?
    /// Where the cookies are written when the download ends, however it ends (curl's `-c FILE`):
    /// those of `cookieFile` and every `Set-Cookie` received, redirects included, merged into what
    /// the file holds by then. Written 0600: cookies are credentials.
    public var cookieJar: String?
    /// Other URLs of the same file (mirrors): segments are spread over them, each proven to serve
    /// the same bytes as the request's URL before any of its bytes are kept (its length, and 64
    /// KiB already delivered compared byte for byte; then its own validator in `If-Range` on every
    /// request). A mirror that disagrees or keeps failing is dropped (a `.mirror` event says why).
    /// Used when the download is segmented (a whole file into a file, fetched with GET); each
    /// mirror's requests are built from its own URL alone, never with the request's headers or body.
    public var mirrors: [URL] = []
    /// Use mirrors although no digest of the whole file is known (no `checksum`, none published
    /// by the server): their bytes are then proven only by the 64 KiB window each is probed
    /// with, and the completion says so. Off by default: without a digest, mirrors are not used.
    public var allowsUnverifiedMirrors = false
    /// Give the finished file the modification time the server states (`Last-Modified`), as
    /// curl's `-R` and aria2's `remote-time` do. Off by default: the file's time is when it was
    /// written. A response without the date, or a file system that refuses it, keeps that time.
    public var usesRemoteTime = false

    /// The defaults: every check on, no limit of its own, TLS verified, the environment's proxy.
    public init() {}

    /// A setting of `transfer`, read and written as the options' own.
    public subscript<Value>(dynamicMember setting: WritableKeyPath<TransferOptions, Value>) -> Value {
        get { transfer[keyPath: setting] }
        set { transfer[keyPath: setting] = newValue }
    }

    /// What a queued download keeps of these options, as it reads back: the paths of its files
    /// (netrc, CA bundle, cookies) made absolute against the working directory (it may run from another),
    /// and the transfer's timeouts and pacer, which are the run's, at their defaults.
    package var toKeep: DownloadOptions {
        var options = self
        let defaults = TransferOptions()
        options.transfer.connectTimeout = defaults.connectTimeout
        options.transfer.stallTimeout = defaults.stallTimeout
        options.transfer.pacer = nil
        options.transfer.netrcFile = transfer.netrcFile.map(AbsolutePath.of)
        options.transfer.caFile = transfer.caFile.map(AbsolutePath.of)
        options.cookieFile = cookieFile.map(AbsolutePath.of)
        options.cookieJar = cookieJar.map(AbsolutePath.of)
        return options
    }

    /// These options with nothing secret left: the proxy's and the mirrors' passwords are removed
    /// (`user:password@` becomes `user@`). What a download that can no longer run keeps.
    package var withoutSecrets: DownloadOptions {
        var options = self
        options.transfer.proxy = transfer.proxy.map(Redaction.withoutPassword)
        options.mirrors = mirrors.compactMap { mirror in
            // The URL itself when it has no password; one that cannot be written without it goes.
            let text = mirror.absoluteString
            let without = Redaction.withoutPassword(text)
            return without == text ? mirror : URL(string: without)
        }
        return options
    }
}

extension DownloadOptions: Codable {
    /// The keys of the queue's `options` column, as they have been since migration `v3-options`
    /// (the transfer's are beside them, flat: `TransferOptions`' own coding).
    private enum CodingKeys: String, CodingKey {
        case checksum, minFreeSpace, maxSize, serverDigest, s3Checksums, connections, bytesPerSecond, allowsHTTPRedirect, maxRedirects,
            cookieFile, cookieJar, mirrors, mirrorsUnverified, remoteTime
    }

    /// Reads what `encode(to:)` writes and what earlier builds wrote; an absent key is the default.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        transfer = try TransferOptions(from: decoder)
        checksum = try container.decodeIfPresent(Checksum.self, forKey: .checksum)
        minFreeSpace = try container.decodeIfPresent(Int64.self, forKey: .minFreeSpace)
        maxSize = try container.decodeIfPresent(Int64.self, forKey: .maxSize)
        verifiesServerDigest = try container.decodeIfPresent(Bool.self, forKey: .serverDigest) ?? true
        asksS3Checksum = try container.decodeIfPresent(Bool.self, forKey: .s3Checksums) ?? false
        connections = try container.decodeIfPresent(Int.self, forKey: .connections)
        bytesPerSecond = try container.decodeIfPresent(Int64.self, forKey: .bytesPerSecond)
        allowsHTTPRedirect = try container.decodeIfPresent(Bool.self, forKey: .allowsHTTPRedirect) ?? false
        maxRedirects = try container.decodeIfPresent(Int.self, forKey: .maxRedirects) ?? 10
        cookieFile = try container.decodeIfPresent(String.self, forKey: .cookieFile)
        cookieJar = try container.decodeIfPresent(String.self, forKey: .cookieJar)
        mirrors = try (container.decodeIfPresent([String].self, forKey: .mirrors) ?? []).map { text in
            guard let url = URL(string: text) else {
                throw DecodingError.dataCorruptedError(forKey: .mirrors, in: container, debugDescription: "a mirror that is not a URL")
            }
            return url
        }
        allowsUnverifiedMirrors = try container.decodeIfPresent(Bool.self, forKey: .mirrorsUnverified) ?? false
        usesRemoteTime = try container.decodeIfPresent(Bool.self, forKey: .remoteTime) ?? false
    }

    /// Writes every option that differs from its default, and nothing else (sorted keys, as
    /// HaulJSON writes JSON); the transfer's timeouts and pacer are never written.
    public func encode(to encoder: any Encoder) throws {
        try transfer.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(checksum, forKey: .checksum)
        try container.encodeIfPresent(minFreeSpace, forKey: .minFreeSpace)
        try container.encodeIfPresent(maxSize, forKey: .maxSize)
        if !verifiesServerDigest { try container.encode(false, forKey: .serverDigest) }
        if asksS3Checksum { try container.encode(true, forKey: .s3Checksums) }
        try container.encodeIfPresent(connections, forKey: .connections)
        try container.encodeIfPresent(bytesPerSecond, forKey: .bytesPerSecond)
        if allowsHTTPRedirect { try container.encode(true, forKey: .allowsHTTPRedirect) }
        if maxRedirects != 10 { try container.encode(maxRedirects, forKey: .maxRedirects) }
        try container.encodeIfPresent(cookieFile, forKey: .cookieFile)
        try container.encodeIfPresent(cookieJar, forKey: .cookieJar)
        if !mirrors.isEmpty { try container.encode(mirrors.map(\.absoluteString), forKey: .mirrors) }
        if allowsUnverifiedMirrors { try container.encode(true, forKey: .mirrorsUnverified) }
        if usesRemoteTime { try container.encode(true, forKey: .remoteTime) }
    }
}

extension DownloadSetting {
    /// `DownloadOptions.maxSize`.
    public static let maxSize = DownloadSetting("max-size", "maxSize")
    /// `DownloadOptions.minFreeSpace`.
    public static let minFreeSpace = DownloadSetting("min-free-space", "minFreeSpace")
    /// `DownloadOptions.allowsHTTPRedirect`.
    public static let allowsHTTPRedirect = DownloadSetting("allow-http-redirect", "allowsHTTPRedirect")
    /// `TransferOptions.proxy`.
    public static let proxy = DownloadSetting("proxy", "transfer.proxy")
    /// `TransferOptions.noProxy`.
    public static let noProxy = DownloadSetting("noproxy", "transfer.noProxy")
    /// `TransferOptions.caFile`.
    public static let caFile = DownloadSetting("cacert", "transfer.caFile")
    /// `TransferOptions.verifyTLS = false`.
    public static let insecureTLS = DownloadSetting("insecure", "transfer.verifyTLS = false")
    /// `TransferOptions.allowsHTTP2`.
    public static let http2 = DownloadSetting("http2", "transfer.allowsHTTP2")

    /// The settings of `DownloadOptions` that a message can name.
    static let ofOptions: [DownloadSetting] = [.maxSize, .minFreeSpace, .allowsHTTPRedirect, .proxy, .noProxy, .caFile, .insecureTLS, .http2]
}
