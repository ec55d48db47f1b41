/// Which browser-borne requests `haul serve` answers. Pure: the server asks it with the request's
/// `Host` and `Origin` headers.
///
/// - A request with an `Origin` (a browser's) is answered only when that origin is this server's
///   own (`http://` + its `Host`) or one the user allowed (`--allow-origin`, for a web UI served
///   elsewhere): no other page can drive the daemon (CSRF).
/// - On loopback, `Host` must name loopback: a page that made its own domain resolve to
///   127.0.0.1 (DNS rebinding) sends its domain there, and is refused.
/// - Clients that are not browsers (aria2p, curl, scripts) send no `Origin`; the token is what
///   keeps them out.
package struct RequestPolicy: Sendable, Equatable {
    package let loopbackOnly: Bool
    package let allowedOrigins: Set<String>

    package init(loopbackOnly: Bool, allowedOrigins: Set<String>) {
        self.loopbackOnly = loopbackOnly
        self.allowedOrigins = allowedOrigins
    }

    /// Why the request is refused, or nil when it may be answered.
    package func refusal(host: String?, origin: String?) -> String? {
        if loopbackOnly {
            guard let host, Self.isLoopbackHost(host) else {
                return "the Host header must name this machine (127.0.0.1, localhost or [::1])"
            }
        }
        guard let origin else { return nil }
        if admitsCrossOrigin(origin) { return nil }
        if origin == "null" {
            return "requests from origin null (a sandboxed page or a local file) are refused (start haul serve with --allow-origin null to allow them)"
        }
        if let host, origin.lowercased() == "http://" + host.lowercased() || origin.lowercased() == "https://" + host.lowercased() {
            return nil
        }
        return "requests from origin \(origin) are refused (start haul serve with --allow-origin \(origin) to allow a web UI there)"
    }

    /// Whether a page of `origin`, another origin than the server's own, was allowed by the user:
    /// named with `--allow-origin`, or any origin with `*`. `null` (sandboxed frames, local
    /// files, some redirects: pages anyone can make) only when named itself, never by `*`.
    package func admitsCrossOrigin(_ origin: String) -> Bool {
        allowedOrigins.contains(origin) || (origin != "null" && allowedOrigins.contains("*"))
    }

    /// Whether `host` (a Host header: name or address, optional port) is loopback.
    static func isLoopbackHost(_ host: String) -> Bool {
        var name = host
        if name.hasPrefix("[") {
            guard let close = name.firstIndex(of: "]") else { return false }
            name = String(name[name.index(after: name.startIndex)..<close])
        } else if let colon = name.lastIndex(of: ":") {
            name = String(name[..<colon])
        }
        return isLoopbackName(name)
    }

    /// Whether `name` (a bare name or address, IPv6 with or without brackets, no port) is
    /// loopback: `localhost`, `::1`, `127.x.y.z`. Also what `--listen` is judged by.
    package static func isLoopbackName(_ name: String) -> Bool {
        var name = name.lowercased()
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if name == "localhost" || name == "::1" { return true }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { part in UInt8(part) != nil }
    }
}
