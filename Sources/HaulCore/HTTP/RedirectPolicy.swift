import Foundation

/// Why a redirect was not followed.
package struct RedirectError: Error, Sendable, Equatable {
    /// Why, for a person (hop limit, loop, scheme, https to http), naming the setting that allows it.
    package let text: SettingText
    /// Why, with the library's names for settings.
    package var message: String { text.description }

    /// A refusal told by `text`.
    package init(_ text: SettingText) {
        self.text = text
    }
}

/// Decides the next request after a 3xx response; a pure function of the request and the response.
///
/// Haul follows redirects itself, not through libcurl, so that the rules are explicit and tested:
/// a hop limit, loop detection, only http/https, the method rewrite of RFC 9110 §15.4, and no
/// credentials (`Authorization`, `Cookie`, `Proxy-Authorization`) sent to another origin.
package struct RedirectPolicy: Sendable {
    /// Redirects followed at most in one chain.
    package var maxRedirects: Int
    /// Whether a redirect from https to http may be followed. Off by default: everything after it,
    /// headers and body included, would travel unencrypted.
    package var allowsDowngrade: Bool
    /// Headers that carry credentials and are dropped once a redirect leaves the original origin.
    package static let credentialHeaders = ["Authorization", "Cookie", "Proxy-Authorization"]

    /// A policy following up to `maxRedirects` redirects, https to http only with `allowsDowngrade`.
    package init(maxRedirects: Int = 10, allowsDowngrade: Bool = false) {
        self.maxRedirects = maxRedirects
        self.allowsDowngrade = allowsDowngrade
    }

    /// The request to send next.
    /// - Parameters:
    ///   - request: the request that got the redirect.
    ///   - head: the 3xx response.
    ///   - originalOrigin: the origin of the first request of the chain; credentials go nowhere else.
    ///   - visited: the URLs requested so far in this chain, the current one included.
    package func nextRequest(
        after request: TransferRequest,
        head: ResponseHead,
        originalOrigin: Origin,
        visited: [URL]
    ) throws(RedirectError) -> TransferRequest {
        guard visited.count <= maxRedirects else {
            throw RedirectError("too many redirects (more than \(maxRedirects))")
        }
        guard let location = head.headers["Location"]?.trimmingCharacters(in: .whitespaces), !location.isEmpty else {
            throw RedirectError("redirect \(head.status) without a Location header")
        }
        guard let target = URL(string: location, relativeTo: request.url)?.absoluteURL else {
            throw RedirectError("redirect to an invalid location: \(location)")
        }
        guard let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https", target.host != nil else {
            throw RedirectError("redirect to an unsupported location: \(location)")
        }
        if !allowsDowngrade, request.url.scheme?.lowercased() == "https", scheme == "http" {
            throw RedirectError(
                "refused a redirect from https to http (\(Redaction.url(target))): the request would continue unencrypted; allow it with \(setting: .allowsHTTPRedirect)"
            )
        }
        let normalized = Self.withoutFragment(target)
        if visited.contains(where: { Self.withoutFragment($0) == normalized }) {
            throw RedirectError("redirect loop at \(Redaction.url(normalized))")
        }
        var next = request
        next.url = normalized
        let becomesGet =
            head.status == 303 && request.method != "HEAD"
            || (head.status == 301 || head.status == 302) && request.method == "POST"
        if becomesGet {
            next.method = "GET"
            next.body = nil
            next.headers.remove("Content-Type")
            next.headers.remove("Content-Length")
        }
        if Origin(normalized) != originalOrigin {
            for name in Self.credentialHeaders { next.headers.remove(name) }
        }
        return next
    }

    static func withoutFragment(_ url: URL) -> URL {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return url }
        components.fragment = nil
        return components.url ?? url
    }
}
