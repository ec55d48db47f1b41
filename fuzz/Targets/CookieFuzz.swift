// Set-Cookie values from a server, cookie dates and Netscape cookie files -> CookieJar.
// Checks: nothing a jar keeps can break a header line or a line of the cookie file (no control
// character, no ';', no tab); a cookie's domain is lower-cased without a leading dot and its path
// starts with "/"; a cookie is only ever kept for the host that set it or a domain above it; the
// Cookie header for any URL is one line; a jar written as a cookie file reads back to the same
// cookies (the expired ones dropped); a cookie date lies in years 1601...9999.

import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let now = input.int64(in: 0...4_000_000_000)
    let hosts = ["a.example.com", "example.com", "127.0.0.1", "[::1]", "localhost", "x.y.z.test"]
    let scheme = input.pick(["http", "https"])
    let host = input.pick(hosts)
    let path = input.pick(["/", "/dir/file", "/dir/", "", "/a/b/c?q=1"])
    guard let from = URL(string: "\(scheme)://\(host)\(path)") else { return 0 }
    let text = input.remainingText

    // The text as Set-Cookie values from one response, and as a cookie file.
    var jar = CookieJar()
    for line in text.split(separator: "\n").prefix(64) { jar.receive(setCookie: String(line), from: from, now: now) }
    check(jar, setBy: from, now: now)
    let (file, _) = CookieJar.parse(netscape: text)
    check(file, setBy: nil, now: now)

    if let seconds = CookieDate.parse(text) {
        require(seconds >= -11_644_473_600 && seconds <= 253_402_300_799, "cookie date \(seconds) from \(text.debugDescription)")
    }
    return 0
}

private func check(_ jar: CookieJar, setBy url: URL?, now: Int64) {
    for cookie in jar.cookies {
        for field in [cookie.name, cookie.value, cookie.domain, cookie.path] {
            require(
                field.utf8.allSatisfy { $0 >= 0x20 && $0 != 0x7F && $0 != UInt8(ascii: ";") },
                "a cookie field can break a header or a file line: \(field.debugDescription)")
        }
        require(!cookie.name.isEmpty && !cookie.name.contains("="), "bad name \(cookie.name.debugDescription)")
        require(cookie.path.hasPrefix("/"), "path \(cookie.path.debugDescription)")
        require(!cookie.domain.isEmpty && !cookie.domain.hasPrefix(".") && cookie.domain == cookie.domain.lowercased(), "domain \(cookie.domain)")
        if let url, let host = url.host?.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]")) {
            require(host == cookie.domain || host.hasSuffix("." + cookie.domain), "\(host) set a cookie for \(cookie.domain)")
            require(!cookie.isExpired(now: now), "an expired cookie was kept")
        }
    }
    for probe in ["http://a.example.com/dir/file", "https://example.com/", "http://127.0.0.1/x", "https://localhost/dir/"] {
        guard let url = URL(string: probe), let header = jar.header(for: url, now: now) else { continue }
        require(!header.isEmpty && !header.utf8.contains { $0 == 0x0A || $0 == 0x0D }, "Cookie header \(header.debugDescription)")
    }
    let written = jar.netscapeText(now: now)
    let (again, invalid) = CookieJar.parse(netscape: written)
    require(invalid.isEmpty, "the jar's own file has lines that are not cookies: \(invalid) in \(written.debugDescription)")
    let kept = jar.cookies.filter { !$0.isExpired(now: now) }
    require(again.cookies == kept, "the cookie file does not read back: \(written.debugDescription)")
}
