import Foundation

/// One HTTP cookie as a jar keeps it (RFC 6265 §5.3), with exactly the fields of a Netscape cookie
/// file (curl's `-b`/`-c`, wget's `--load-cookies`).
package struct Cookie: Sendable, Equatable {
    /// The cookie's name.
    package var name: String
    /// The cookie's value, as the server set it.
    package var value: String
    /// The host or domain it belongs to: lowercased, without a leading dot.
    package var domain: String
    /// Sent to `domain` itself only, not to its subdomains (a cookie set without a `Domain` attribute).
    package var hostOnly: Bool
    /// The path prefix of the requests that carry it (`/` for all).
    package var path: String
    /// Sent over https only.
    package var secure: Bool
    /// Marked HttpOnly by the server; kept for the cookie file (`#HttpOnly_` lines), no effect on a download.
    package var httpOnly: Bool
    /// Unix time of its expiry; nil for a session cookie.
    package var expires: Int64?

    /// A cookie with these fields; by default a host-only session cookie for every path.
    package init(
        name: String, value: String, domain: String, hostOnly: Bool = true, path: String = "/", secure: Bool = false, httpOnly: Bool = false,
        expires: Int64? = nil
    ) {
        self.name = name
        self.value = value
        self.domain = domain
        self.hostOnly = hostOnly
        self.path = path
        self.secure = secure
        self.httpOnly = httpOnly
        self.expires = expires
    }

    /// What identifies a cookie in a jar: a newer one with the same key replaces it (RFC 6265 §5.3 step 11).
    package struct Key: Hashable, Sendable {
        /// The cookie's name.
        package let name: String
        /// Its host or domain, lowercased.
        package let domain: String
        /// Its path.
        package let path: String
    }

    /// The cookie's identity in a jar.
    package var key: Key { Key(name: name, domain: domain, path: path) }

    /// Whether it has expired at `now` (Unix time in seconds); a session cookie never does.
    package func isExpired(now: Int64) -> Bool {
        expires.map { $0 <= now } ?? false
    }

    /// Whether a request to `url` carries this cookie (RFC 6265 §5.4): its host, a path under its
    /// path, https for a secure cookie, and not expired.
    package func matches(_ url: URL, now: Int64) -> Bool {
        guard !isExpired(now: now), let host = CookieURL.host(url) else { return false }
        if secure && url.scheme?.lowercased() != "https" { return false }
        let hostMatches = hostOnly ? host == domain : CookieURL.domainMatches(host: host, domain: domain)
        return hostMatches && CookieURL.pathMatches(CookieURL.path(url), cookiePath: path)
    }

    /// Longest name plus value a jar takes (RFC 6265 §6.1 asks for at least 4096 bytes).
    package static let maxBytes = 4096
}

extension Cookie {
    /// The cookie a `Set-Cookie` field from `url` sets (RFC 6265 §5.2 and §5.3), or nil when it is
    /// malformed or not `url`'s to set (a `Domain` that `url`'s host is not in, a secure cookie
    /// over plain http). An already expired result is a request to delete the cookie with its key.
    ///
    /// No public suffix list is consulted: a `Domain` of a single label (`com`, `localhost`) is
    /// refused unless it is the host itself, which keeps one site from setting cookies for a TLD.
    package static func parse(setCookie field: String, from url: URL, now: Int64) -> Cookie? {
        guard let host = CookieURL.host(url), field.utf8.count <= maxBytes * 2 else { return nil }
        let parts = field.split(separator: ";", omittingEmptySubsequences: false)
        guard let pair = parts.first, let equals = pair.firstIndex(of: "=") else { return nil }
        let name = pair[..<equals].trimmingCharacters(in: .whitespaces)
        let value = pair[pair.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty, isSafe(name, allowing: []), isSafe(value, allowing: []), name.utf8.count + value.utf8.count <= maxBytes else {
            return nil
        }
        var attributes = Attributes()
        for attribute in parts.dropFirst() { attributes.read(attribute, now: now) }

        var cookie = Cookie(name: name, value: value, domain: host, path: attributes.path ?? defaultPath(CookieURL.path(url)))
        if let domain = attributes.domain, domain != host {
            guard !CookieURL.isIPAddress(host), domain.contains("."), CookieURL.domainMatches(host: host, domain: domain) else { return nil }
            cookie.domain = domain
            cookie.hostOnly = false
        } else if attributes.domain != nil {
            cookie.hostOnly = false
        }
        cookie.secure = attributes.secure
        if cookie.secure && url.scheme?.lowercased() != "https" { return nil }
        cookie.httpOnly = attributes.httpOnly
        cookie.expires = attributes.maxAgeExpiry ?? attributes.expires
        return cookie
    }

    /// The attributes after the name and value, as §5.2 reads them: unknown ones ignored, the last
    /// of each kind winning, and `Max-Age` over `Expires` whatever their order.
    private struct Attributes {
        var expires: Int64?
        var maxAgeExpiry: Int64?
        var domain: String?
        var path: String?
        var secure = false
        var httpOnly = false

        mutating func read(_ text: Substring, now: Int64) {
            let name: String
            let value: String
            if let equals = text.firstIndex(of: "=") {
                name = text[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
                value = text[text.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            } else {
                name = text.trimmingCharacters(in: .whitespaces).lowercased()
                value = ""
            }
            switch name {
            case "expires":
                if let date = CookieDate.parse(value) { expires = date }
            case "max-age":
                let negative = value.hasPrefix("-")
                let digits = negative ? value.dropFirst() : Substring(value)
                guard DecimalDigits.isAllDigits(digits) else { return }
                // Zero or less deletes the cookie; a delta too large for Int64 is "far in the future".
                let seconds = DecimalDigits.nonNegativeInt64(digits) ?? Int64.max
                if negative || seconds == 0 {
                    maxAgeExpiry = Int64.min
                } else {
                    let (sum, overflow) = now.addingReportingOverflow(seconds)
                    maxAgeExpiry = overflow ? Int64.max : sum
                }
            case "domain":
                // A host name is ASCII (an international one travels as punycode); anything else
                // is refused, also because Character-wise, "." followed by a combining mark is not
                // a dot, and the domain would not read back from the cookie file.
                guard value.utf8.allSatisfy({ $0 < 0x80 }) else { return }
                var domain = Substring(value.lowercased())
                if domain.hasPrefix(".") { domain = domain.dropFirst() }
                if Cookie.isHostName(String(domain)) { self.domain = String(domain) }
            case "path":
                path = value.hasPrefix("/") && Cookie.isSafe(value, allowing: []) ? value : nil
            case "secure":
                secure = true
            case "httponly":
                httpOnly = true
            default:
                break
            }
        }
    }

    /// RFC 6265 §5.1.4: the directory of the request's path.
    static func defaultPath(_ path: String) -> String {
        guard path.hasPrefix("/"), let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }

    /// A host name or address as a cookie's domain: ASCII letters, digits, `.`, `-`, `_`, and `:`
    /// `[` `]` for IPv6; nothing else (a `#` first would make its line in the cookie file a comment).
    static func isHostName(_ text: String) -> Bool {
        !text.isEmpty
            && text.utf8.allSatisfy { byte in
                (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39)
                    || [UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "["), UInt8(ascii: "]")].contains(byte)
            }
    }

    /// No control characters, no `;` (which would split the header), nothing that could break a
    /// header line or a line of the cookie file.
    static func isSafe(_ text: String, allowing extra: Set<UInt8>) -> Bool {
        text.utf8.allSatisfy { byte in
            (byte >= 0x20 && byte != 0x7F && byte != UInt8(ascii: ";")) || extra.contains(byte)
        }
    }
}

/// The parts of a URL cookies are matched on.
enum CookieURL {
    /// The host, lowercased, without IPv6 brackets.
    static func host(_ url: URL) -> String? {
        guard var host = url.host?.lowercased(), !host.isEmpty else { return nil }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.hasSuffix(".") { host.removeLast() }
        return host.isEmpty ? nil : host
    }

    /// The path as sent (percent-encoded), "/" when empty.
    static func path(_ url: URL) -> String {
        let path = URLComponents(url: url, resolvingAgainstBaseURL: true)?.percentEncodedPath ?? url.path
        return path.isEmpty ? "/" : path
    }

    /// RFC 6265 §5.1.3: the host is the domain or lies inside it; an IP address only matches itself.
    static func domainMatches(host: String, domain: String) -> Bool {
        host == domain || (!isIPAddress(host) && host.hasSuffix("." + domain))
    }

    /// RFC 6265 §5.1.4.
    static func pathMatches(_ requestPath: String, cookiePath: String) -> Bool {
        guard requestPath.hasPrefix(cookiePath) else { return false }
        if requestPath.utf8.count == cookiePath.utf8.count || cookiePath.hasSuffix("/") { return true }
        return requestPath.utf8.dropFirst(cookiePath.utf8.count).first == UInt8(ascii: "/")
    }

    static func isIPAddress(_ host: String) -> Bool {
        if host.contains(":") { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { part in (DecimalDigits.nonNegativeInt64(part) ?? 256) <= 255 }
    }
}

/// The lenient date grammar of `Expires` (RFC 6265 §5.1.1), which accepts what servers really send
/// ("Wed, 21-Oct-2015 07:28:00 GMT", two-digit years, any order of the tokens).
package enum CookieDate {
    /// Unix time, or nil when the text holds no complete date.
    package static func parse(_ text: String) -> Int64? {
        guard text.utf8.count <= 256 else { return nil }
        var time: (Int64, Int64, Int64)?
        var day: Int64?
        var month: Int64?
        var year: Int64?
        for token in tokens(text) {
            if time == nil, let found = Self.time(token) {
                time = found
            } else if day == nil, let found = leadingDigits(token, 1...2) {
                day = found
            } else if month == nil, let found = Self.month(token) {
                month = found
            } else if year == nil, let found = leadingDigits(token, 2...4) {
                year = found
            }
        }
        guard let (hour, minute, second) = time, let day, let month, var year else { return nil }
        if (70...99).contains(year) { year += 1900 } else if (0...69).contains(year) { year += 2000 }
        guard year >= 1601, hour <= 23, minute <= 59, second <= 59 else { return nil }
        let civil = CivilTime(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        return civil.isValid ? civil.secondsSince1970 : nil
    }

    private static func isDelimiter(_ byte: UInt8) -> Bool {
        byte == 0x09 || (0x20...0x2F).contains(byte) || (0x3B...0x40).contains(byte) || (0x5B...0x60).contains(byte)
            || (0x7B...0x7E).contains(byte)
    }

    private static func tokens(_ text: String) -> [ArraySlice<UInt8>] {
        Array(text.utf8).split(whereSeparator: isDelimiter)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    /// `count` digits, then nothing or a non-digit and anything.
    private static func leadingDigits(_ token: ArraySlice<UInt8>, _ count: ClosedRange<Int>) -> Int64? {
        let digits = token.prefix(while: isDigit)
        guard count.contains(digits.count) else { return nil }
        return digits.reduce(0) { $0 * 10 + Int64($1 - 0x30) }
    }

    /// `h:m:s` with one or two digits each, then nothing or a non-digit and anything.
    private static func time(_ token: ArraySlice<UInt8>) -> (Int64, Int64, Int64)? {
        var fields: [Int64] = []
        var rest = token[...]
        for index in 0..<3 {
            let digits = rest.prefix(while: isDigit)
            guard (1...2).contains(digits.count) else { return nil }
            fields.append(digits.reduce(0) { $0 * 10 + Int64($1 - 0x30) })
            rest = rest.dropFirst(digits.count)
            if index < 2 {
                guard rest.first == UInt8(ascii: ":") else { return nil }
                rest = rest.dropFirst()
            }
        }
        if let next = rest.first, isDigit(next) { return nil }
        return (fields[0], fields[1], fields[2])
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    private static func month(_ token: ArraySlice<UInt8>) -> Int64? {
        guard token.count >= 3 else { return nil }
        let prefix = String(decoding: token.prefix(3), as: UTF8.self).lowercased()
        return months.firstIndex(of: prefix).map { Int64($0 + 1) }
    }
}
