import Foundation

/// One HTTP request exactly as it goes on the wire: no redirects are followed by the transport.
package struct TransferRequest: Sendable, Equatable {
    /// The URL asked for.
    package var url: URL
    /// The HTTP method.
    package var method: String
    /// The header fields sent, in order.
    package var headers: HTTPHeaders
    /// The request body; nil for none.
    package var body: [UInt8]?

    /// A request for `url`; by default a GET without headers or body.
    package init(url: URL, method: String = "GET", headers: HTTPHeaders = HTTPHeaders(), body: [UInt8]? = nil) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
    }

    /// The scheme, host and port that decide where credentials may be sent (RFC 6454 origin).
    package var origin: Origin { Origin(url) }
}

/// The (scheme, host, port) triple of a URL.
package struct Origin: Sendable, Hashable {
    /// The scheme, lowercased.
    package let scheme: String
    /// The host, lowercased; empty when the URL has none.
    package let host: String
    /// The port; the scheme's default (443 for https, else 80) when the URL names none.
    package let port: Int

    /// The origin of `url`.
    package init(_ url: URL) {
        let scheme = url.scheme?.lowercased() ?? ""
        self.scheme = scheme
        self.host = url.host?.lowercased() ?? ""
        self.port = url.port ?? (scheme == "https" ? 443 : 80)
    }
}

extension TransferRequest {
    /// This request asking for what `plan` wants: the one place `Range` and `If-Range` are set.
    /// Any range header already present (a user's, or an earlier plan's) is replaced or removed,
    /// since a range Haul did not plan would defeat the verification of the response.
    package func asking(for plan: RequestPlan) -> TransferRequest {
        var request = self
        request.headers.remove("Range")
        request.headers.remove("If-Range")
        if let range = plan.range { request.headers.set("Range", range) }
        if let ifRange = plan.ifRange { request.headers.set("If-Range", ifRange) }
        return request
    }
}
