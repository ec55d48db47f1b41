import Foundation

/// The cookies of a download, read from and written to a Netscape cookie file (the format of
/// curl's `-b`/`-c` and wget's `--load-cookies`/`--save-cookies`).
///
/// Haul keeps cookies itself rather than in libcurl's cookie engine: its easy handles are pooled
/// and `curl_easy_reset` keeps a handle's cookies, so one download's cookies would reach the next
/// download that takes the handle; and Haul follows redirects itself, so the `Set-Cookie` of every
/// hop must be read where the hops are. Here it is one value with pure, tested rules.
package struct CookieJar: Sendable, Equatable {
    /// In order of creation (a replaced cookie keeps its place, RFC 6265 §5.3 step 11.3).
    package private(set) var cookies: [Cookie] = []
    /// The keys this jar set or deleted after it was read: what a merge takes from it.
    package private(set) var changed: Set<Cookie.Key> = []

    /// The most cookies a jar holds; more from a server are ignored.
    package static let maxCookies = 3000

    /// A jar holding `cookies`, inserted in order (a later one with the same key replaces an earlier one).
    package init(_ cookies: [Cookie] = []) {
        for cookie in cookies { insert(cookie) }
    }

    // MARK: - Requests and responses

    /// The `Cookie` header value for a request to `url`, or nil when no cookie applies: cookies
    /// with longer paths first, then older ones first (RFC 6265 §5.4).
    package func header(for url: URL, now: Int64) -> String? {
        let matching = cookies.enumerated().filter { $0.element.matches(url, now: now) }
            .sorted { ($0.element.path.utf8.count, -$0.offset) > ($1.element.path.utf8.count, -$1.offset) }
        guard !matching.isEmpty else { return nil }
        return matching.map { "\($0.element.name)=\($0.element.value)" }.joined(separator: "; ")
    }

    /// Takes in every `Set-Cookie` field of a response from `url` (a redirect's included).
    package mutating func receive(_ headers: HTTPHeaders, from url: URL, now: Int64) {
        for field in headers where field.name.lowercased() == "set-cookie" {
            receive(setCookie: field.value, from: url, now: now)
        }
    }

    /// Takes in one `Set-Cookie` value: stores, replaces or (already expired) deletes a cookie.
    package mutating func receive(setCookie value: String, from url: URL, now: Int64) {
        guard let cookie = Cookie.parse(setCookie: value, from: url, now: now) else { return }
        if cookie.isExpired(now: now) {
            cookies.removeAll { $0.key == cookie.key }
        } else if !insert(cookie) {
            return
        }
        changed.insert(cookie.key)
    }

    /// Replaces the cookie with the same key, else appends; false when the jar is full.
    @discardableResult
    private mutating func insert(_ cookie: Cookie) -> Bool {
        if let index = cookies.firstIndex(where: { $0.key == cookie.key }) {
            cookies[index] = cookie
            return true
        }
        guard cookies.count < Self.maxCookies else { return false }
        cookies.append(cookie)
        return true
    }

    // MARK: - Writing back

    /// This jar written over `onDisk`, the cookie file as it is now (another download may have
    /// written it since this one was read): what this jar set or deleted wins and the file's other
    /// cookies stay. Cookies this jar only read are added where the file has none with their key,
    /// unless `readFromIt`: read from that very file, a cookie missing there now was deleted by
    /// another download since, and stays deleted.
    package func merged(into onDisk: CookieJar, readFromIt: Bool = false) -> CookieJar {
        var result = CookieJar(onDisk.cookies)
        result.cookies.removeAll { changed.contains($0.key) }
        for cookie in cookies {
            let keep = changed.contains(cookie.key) || (!readFromIt && !result.cookies.contains { $0.key == cookie.key })
            if keep { result.insert(cookie) }
        }
        return result
    }

    // MARK: - The Netscape cookie file

    /// A cookie file's cookies, and the numbers (from 1) of the lines that are neither a cookie, a
    /// comment nor blank. Lines are `domain TAB subdomains TAB path TAB secure TAB expires TAB name
    /// TAB value`, `#HttpOnly_` before the domain for an http-only cookie, expires 0 for a session cookie.
    package static func parse(netscape text: String) -> (jar: CookieJar, invalidLines: [Int]) {
        var jar = CookieJar()
        var invalid: [Int] = []
        // "\r\n" is one Character: split on it as well as on "\n".
        for (index, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).enumerated() {
            var line = rawLine
            if line.hasSuffix("\r") { line = line.dropLast() }
            var httpOnly = false
            if line.hasPrefix("#HttpOnly_") {
                httpOnly = true
                line = line.dropFirst("#HttpOnly_".count)
            } else if line.hasPrefix("#") || line.allSatisfy({ $0 == " " || $0 == "\t" }) {
                continue
            }
            guard var cookie = cookie(line) else {
                invalid.append(index + 1)
                continue
            }
            cookie.httpOnly = httpOnly
            jar.insert(cookie)
        }
        return (jar, invalid)
    }

    private static func cookie(_ line: Substring) -> Cookie? {
        // Split on bytes, not Characters: a tab followed by a combining mark is one Character.
        let fields = line.utf8.split(separator: 0x09, maxSplits: 6, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        guard fields.count == 6 || fields.count == 7, let expires = DecimalDigits.nonNegativeInt64(fields[4]),
            Cookie.isHostName(fields[0].hasPrefix(".") ? String(fields[0].dropFirst()) : fields[0])
        else { return nil }
        var domain = fields[0].lowercased()
        if domain.hasPrefix(".") { domain.removeFirst() }
        let name = fields[5]
        let value = fields.count == 7 ? fields[6] : ""
        guard !domain.isEmpty, !domain.hasPrefix("."), !name.isEmpty, fields[2].hasPrefix("/"),
            [domain, fields[2], name, value].allSatisfy({ Cookie.isSafe($0, allowing: []) && !$0.contains("\t") }),
            !name.contains("="), name.utf8.count + value.utf8.count <= Cookie.maxBytes
        else { return nil }
        return Cookie(
            name: name, value: value, domain: domain, hostOnly: fields[1].uppercased() != "TRUE", path: fields[2],
            secure: fields[3].uppercased() == "TRUE", expires: expires == 0 ? nil : expires)
    }

    /// The jar as a cookie file, without the cookies expired at `now`.
    package func netscapeText(now: Int64) -> String {
        var text = "# Netscape HTTP Cookie File\n# Written by haul. Cookies are credentials: keep this file private.\n\n"
        for cookie in cookies where !cookie.isExpired(now: now) {
            let fields = [
                (cookie.httpOnly ? "#HttpOnly_" : "") + (cookie.hostOnly ? "" : ".") + cookie.domain,
                cookie.hostOnly ? "FALSE" : "TRUE",
                cookie.path,
                cookie.secure ? "TRUE" : "FALSE",
                String(cookie.expires ?? 0),
                cookie.name,
                cookie.value,
            ]
            text += fields.joined(separator: "\t") + "\n"
        }
        return text
    }
}
