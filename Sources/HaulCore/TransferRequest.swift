import Foundation

/// One HTTP request exactly as it goes on the wire: no redirects are followed by the transport.
public struct TransferRequest: Sendable, Equatable {
    public var url: URL
    public var method: String
    public var headers: HTTPHeaders
    public var body: [UInt8]?

    public init(url: URL, method: String = "GET", headers: HTTPHeaders = HTTPHeaders(), body: [UInt8]? = nil) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
    }

    /// The scheme, host and port that decide where credentials may be sent (RFC 6454 origin).
    public var origin: Origin { Origin(url) }
}

/// The (scheme, host, port) triple of a URL.
public struct Origin: Sendable, Hashable {
    public let scheme: String
    public let host: String
    public let port: Int

    public init(_ url: URL) {
        let scheme = url.scheme?.lowercased() ?? ""
        self.scheme = scheme
        self.host = url.host?.lowercased() ?? ""
        self.port = url.port ?? (scheme == "https" ? 443 : 80)
    }
}
