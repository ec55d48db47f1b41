import Foundation

/// Settings for one transfer. Its connection settings (TLS, proxy, netrc, HTTP/2) are a
/// download's own and are stored with a queued one (`Codable`, within `DownloadOptions`); its
/// timeouts and pacer are the run's, never coded.
public struct TransferOptions: Sendable, Equatable {
    /// Seconds allowed for the connection (TCP and TLS) to be set up; nil for the transport's default.
    public var connectTimeout: Double?
    /// Seconds without a single body byte after which the transfer is ended as stalled; nil for never.
    public var stallTimeout: Double?
    /// Whether TLS certificates and host names are verified.
    public var verifyTLS: Bool
    /// An extra CA bundle (PEM) to trust.
    public var caFile: String?
    /// The proxy every request goes through (`http://`, `https://`, `socks5://`, `socks5h://`; a
    /// password in it is a secret); "" for none at all. Nil leaves the choice to libcurl, which
    /// reads `http_proxy`, `https_proxy`, `all_proxy` and `no_proxy` as curl does.
    public var proxy: String?
    /// Hosts reached without the proxy (curl's `--noproxy`: `*`, or names, domains and addresses
    /// separated by commas); nil leaves it to `no_proxy`.
    public var noProxy: String?
    /// A netrc file whose credentials are used for the host of each request (and only that host:
    /// after a redirect to another host, that host's own entry, if any).
    public var netrcFile: String?
    /// Offer HTTP/2 by ALPN on TLS and use it where the server agrees; otherwise HTTP/1.1. Off by
    /// default: measured against nginx (bench/http2.sh), HTTP/2 was never faster for bulk
    /// transfers and up to 6% slower (each connection carries one transfer either way: a segment
    /// is a connection, so multiplexing buys nothing).
    public var allowsHTTP2 = false
    /// The speed limit the body is kept to, asked before each chunk (`TransferPacer`); nil for none.
    package var pacer: (any TransferPacer)? {
        get { pacerReference?.pacer }
        set { pacerReference = newValue.map(PacerReference.init) }
    }
    private var pacerReference: PacerReference?

    /// Options with these values; by default 30 s to connect, 30 s of silence before a stall, TLS
    /// verified, no extra CA, the proxy and netrc left to the environment, HTTP/1.1.
    public init(
        connectTimeout: Double? = 30,
        stallTimeout: Double? = 30,
        verifyTLS: Bool = true,
        caFile: String? = nil,
        proxy: String? = nil,
        noProxy: String? = nil,
        netrcFile: String? = nil
    ) {
        self.connectTimeout = connectTimeout
        self.stallTimeout = stallTimeout
        self.verifyTLS = verifyTLS
        self.caFile = caFile
        self.proxy = proxy
        self.noProxy = noProxy
        self.netrcFile = netrcFile
    }

    /// These options with the body kept to `pacer` (nil: as they are).
    package func paced(by pacer: (any TransferPacer)?) -> TransferOptions {
        guard let pacer else { return self }
        var options = self
        options.pacer = pacer
        return options
    }
}

extension TransferOptions: Codable {
    /// The keys of the connection settings, as the queue's `options` column has held them since
    /// migration `v3-options` (flat, beside `DownloadOptions`' own keys).
    private enum CodingKeys: String, CodingKey {
        case verifyTLS, caFile, proxy, noProxy, netrcFile, http2
    }

    /// The connection settings from `decoder`; the timeouts and the pacer are the defaults (a
    /// run's, set by whoever runs the download). A setting that is absent is the default.
    public init(from decoder: any Decoder) throws {
        self.init()
        let container = try decoder.container(keyedBy: CodingKeys.self)
        verifyTLS = try container.decodeIfPresent(Bool.self, forKey: .verifyTLS) ?? true
        caFile = try container.decodeIfPresent(String.self, forKey: .caFile)
        proxy = try container.decodeIfPresent(String.self, forKey: .proxy)
        noProxy = try container.decodeIfPresent(String.self, forKey: .noProxy)
        netrcFile = try container.decodeIfPresent(String.self, forKey: .netrcFile)
        allowsHTTP2 = try container.decodeIfPresent(Bool.self, forKey: .http2) ?? false
    }

    /// The connection settings that differ from the defaults; never the timeouts nor the pacer.
    /// (Earlier builds wrote `verifyTLS` always; `true` reads as the default it is.)
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        if !verifyTLS { try container.encode(false, forKey: .verifyTLS) }
        try container.encodeIfPresent(caFile, forKey: .caFile)
        try container.encodeIfPresent(proxy, forKey: .proxy)
        try container.encodeIfPresent(noProxy, forKey: .noProxy)
        try container.encodeIfPresent(netrcFile, forKey: .netrcFile)
        if allowsHTTP2 { try container.encode(true, forKey: .http2) }
    }
}
