import Foundation

/// Why a proxy setting cannot be used. The message shows the value without its password.
package struct ProxyURLError: Error, Sendable, Equatable {
    /// What is wrong, the proxy's password shown as `***`, naming the setting.
    package let text: SettingText
    /// What is wrong, with the library's name for the setting.
    package var message: String { text.description }
}

/// The proxy a transfer goes through, as libcurl chooses it: `--proxy` (an empty one turns
/// proxies off), else the environment (`http_proxy`, `HTTPS_PROXY`/`https_proxy`, `ALL_PROXY`/
/// `all_proxy`), unless `--noproxy` (else `no_proxy`/`NO_PROXY`) lists the host.
///
/// libcurl itself makes the choice for every request (Haul only sets CURLOPT_PROXY and
/// CURLOPT_NOPROXY when they are given); this mirror of its rules (libcurl 7.88 `url.c`,
/// `noproxy.c`) lets a failure name the proxy it could not reach.
package struct ProxyRoute: Sendable, Equatable {
    /// The proxy URL as given, password included: show it through `Redaction.url`.
    package let proxy: String
    /// Where it came from: the proxy setting (`DownloadSetting.proxy`) or the environment variable's name.
    package let source: SettingText

    /// The route through `proxy`, chosen by `source`.
    package init(proxy: String, source: SettingText) {
        self.proxy = proxy
        self.source = source
    }

    /// The proxy schemes `--proxy` takes (`socks5h`: the proxy resolves the host name).
    package static let schemes = ["http", "https", "socks5", "socks5h"]

    /// Checks a `--proxy` value: empty (no proxy at all), or a URL with one of `schemes`, a host,
    /// an optional port and no path, query or fragment.
    package static func validate(_ text: String) throws(ProxyURLError) {
        guard !text.isEmpty else { return }
        let shown = shown(text)
        guard text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F }) else {
            throw ProxyURLError(text: "\(setting: .proxy) \(shown): a proxy URL has no spaces or control characters")
        }
        guard let schemeEnd = text.range(of: "://"), let components = URLComponents(string: text) else {
            throw ProxyURLError(text: "\(setting: .proxy) \(shown): give a URL such as http://host:3128 or socks5h://host:1080")
        }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        guard schemes.contains(scheme) else {
            throw ProxyURLError(text: "\(setting: .proxy) \(shown): the scheme must be http, https, socks5 or socks5h, not \"\(scheme)\"")
        }
        guard let host = components.host, !host.isEmpty else {
            throw ProxyURLError(text: "\(setting: .proxy) \(shown): the URL names no host")
        }
        if let port = components.port, !(1...65535).contains(port) {
            throw ProxyURLError(text: "\(setting: .proxy) \(shown): the port must be 1 to 65535")
        }
        guard components.percentEncodedPath.isEmpty || components.percentEncodedPath == "/", components.query == nil, components.fragment == nil
        else {
            throw ProxyURLError(text: "\(setting: .proxy) \(shown): a proxy URL has no path, query or fragment")
        }
    }

    /// A proxy value as it may be shown: `Redaction.url`, and for text that is no URL Foundation
    /// reads, whatever follows the user's `:` up to the `@` hidden as well.
    package static func shown(_ text: String) -> String {
        let redacted = Redaction.url(text)
        guard redacted == text, let at = text.lastIndex(of: "@") else { return redacted }
        let start = text.range(of: "://")?.upperBound ?? text.startIndex
        guard start <= at, let colon = text[start..<at].firstIndex(of: ":") else { return text }
        return String(text[...colon]) + "***" + String(text[at...])
    }

    /// The proxy libcurl uses for `url`; nil for a direct connection.
    /// - Parameters:
    ///   - proxy: `--proxy`, nil when not given ("" turns proxies off, the environment's too).
    ///   - noProxy: `--noproxy`, nil when not given (then `no_proxy`/`NO_PROXY` apply).
    package static func resolve(for url: URL, proxy: String?, noProxy: String?, environment: [String: String]) -> ProxyRoute? {
        guard let host = url.host, !host.isEmpty else { return nil }
        let exemptions = noProxy ?? environment["no_proxy"] ?? environment["NO_PROXY"]
        if let exemptions, NoProxyList(exemptions).exempts(host: host) { return nil }
        if let proxy { return proxy.isEmpty ? nil : ProxyRoute(proxy: proxy, source: "\(setting: .proxy)") }
        let scheme = url.scheme?.lowercased() ?? "http"
        // libcurl never reads HTTP_PROXY in capitals: in a CGI program it comes from a request's
        // `Proxy:` header (httpoxy).
        var names = ["\(scheme)_proxy"]
        if scheme != "http" { names.append("\(scheme.uppercased())_PROXY") }
        for name in names {
            // A variable that is set decides, even when empty (no proxy then, not all_proxy).
            if let value = environment[name] { return value.isEmpty ? nil : ProxyRoute(proxy: value, source: SettingText(name)) }
        }
        for name in ["all_proxy", "ALL_PROXY"] {
            if let value = environment[name] { return value.isEmpty ? nil : ProxyRoute(proxy: value, source: SettingText(name)) }
        }
        return nil
    }
}

extension ProxyRoute {
    /// Whether the environment names a proxy for some scheme (libcurl's variables, set and not empty).
    package static func environmentNamesProxy(_ environment: [String: String]) -> Bool {
        environmentNames.contains { !(environment[$0] ?? "").isEmpty }
    }

    /// The environment variables libcurl takes a proxy from (never `HTTP_PROXY` in capitals).
    package static let environmentNames = ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"]
}

/// A `--noproxy` / `no_proxy` list as libcurl reads it: `*` alone for every host, else names,
/// domains (`example.com` covers `www.example.com`; a leading dot is ignored) and IP addresses
/// with an optional CIDR prefix length, separated by commas or blanks.
package struct NoProxyList: Sendable, Equatable {
    /// The list as given.
    package let text: String

    /// The list `text` (a `--noproxy` value or `no_proxy`).
    package init(_ text: String) {
        self.text = text
    }

    /// Whether requests to `host` (a name, an IPv4 address or a bracketed or bare IPv6 address) go
    /// around the proxy.
    package func exempts(host rawHost: String) -> Bool {
        if text == "*" { return true }
        var host = rawHost.lowercased()
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let ipv4 = ipv4Number(host)
        let isIPv6 = ipv4 == nil && host.contains(":")
        if ipv4 == nil && !isIPv6 && host.hasSuffix(".") { host.removeLast() }
        let tokens = text.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" })
        for rawToken in tokens {
            var token = rawToken.lowercased()
            if let ipv4 {
                if Self.cidr4(ipv4, token) { return true }
            } else if isIPv6 {
                if token.split(separator: "/").first.map(String.init) == host { return true }
            } else {
                if token.hasSuffix(".") { token.removeLast() }
                if token.hasPrefix(".") { token.removeFirst() }
                guard !token.isEmpty else { continue }
                if host == token || host.hasSuffix("." + token) { return true }
            }
        }
        return false
    }

    /// `token` is an IPv4 address, with `/bits` when a network, that holds `address`.
    private static func cidr4(_ address: UInt32, _ token: String) -> Bool {
        let parts = token.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let network = ipv4Number(String(parts[0])) else { return false }
        var bits = 32
        if parts.count == 2 {
            guard let given = Int(parts[1]), (0...32).contains(given) else { return false }
            bits = given == 0 ? 32 : given
        }
        let mask: UInt32 = bits == 32 ? UInt32.max : ~(UInt32.max >> UInt32(bits))
        return address & mask == network & mask
    }
}

/// A dotted-quad IPv4 address as a number; nil for anything else.
private func ipv4Number(_ text: String) -> UInt32? {
    let parts = text.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 4 else { return nil }
    var value: UInt32 = 0
    for part in parts {
        guard part.utf8.count <= 3, let byte = DecimalDigits.nonNegativeInt64(part), byte <= 255 else { return nil }
        value = value << 8 | UInt32(byte)
    }
    return value
}
