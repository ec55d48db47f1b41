import Foundation
import Testing

@testable import HaulCore

@Suite("Cookies: Set-Cookie, matching, the Netscape file, merging (no I/O)")
struct CookieJarTests {
    let now: Int64 = 1_700_000_000

    func url(_ text: String) throws -> URL {
        try #require(URL(string: text))
    }

    @Test func setCookieWithoutDomainIsForItsHostOnly() throws {
        // GIVEN a cookie set by a.example.com without Domain, at /dir/page
        var jar = CookieJar()
        jar.receive(setCookie: "id=42", from: try url("http://a.example.com/dir/page"), now: now)

        // THEN it goes back to that host under the default path /dir, and nowhere else
        #expect(jar.cookies.first?.hostOnly == true)
        #expect(jar.cookies.first?.path == "/dir")
        #expect(jar.header(for: try url("http://a.example.com/dir/other"), now: now) == "id=42")
        #expect(jar.header(for: try url("http://a.example.com/dir"), now: now) == "id=42")
        #expect(jar.header(for: try url("http://a.example.com/directory"), now: now) == nil)
        #expect(jar.header(for: try url("http://a.example.com/"), now: now) == nil)
        #expect(jar.header(for: try url("http://b.a.example.com/dir/x"), now: now) == nil)
        #expect(jar.header(for: try url("http://example.com/dir/x"), now: now) == nil)
    }

    @Test func aNonASCIIDomainIsRefusedAndTheFileIsSplitOnBytes() throws {
        // Found by CookieFuzz: "." followed by a combining mark is one Character, so the domain
        // did not read back from the file the jar wrote.
        var jar = CookieJar()
        jar.receive(setCookie: "a=1; Domain=.\u{0740}e.com", from: try url("http://x.e.com/"), now: now)
        #expect(jar.cookies.allSatisfy { $0.domain.utf8.allSatisfy { $0 < 0x80 } })
        // A file line whose tab is followed by a combining mark still splits into its fields
        let line = "e.com\tFALSE\t/\tFALSE\t2000000000\tname\t\u{0301}value\n"
        let parsed = CookieJar.parse(netscape: line)
        #expect(parsed.jar.cookies.first?.value == "\u{0301}value")
        let foreign = CookieJar.parse(netscape: ".\u{0740}e.com\tTRUE\t/\tFALSE\t2000000000\tn\tv\n")
        #expect(foreign.jar.cookies.isEmpty && foreign.invalidLines == [1])
        // Also found by CookieFuzz: a domain starting with "#" wrote a line that reads back as a comment
        let hashed = CookieJar.parse(netscape: "#HttpOnly_#ettponly_localhost\tFALSE\t/dir\tFALSE\t0\tsession\t\n")
        #expect(hashed.jar.cookies.isEmpty)
        // Whatever the jar writes, it reads back
        var written = CookieJar()
        written.receive(setCookie: "do\u{FFFD}00on=x", from: try url("http://e.com/"), now: now)
        let text = written.netscapeText(now: now)
        #expect(CookieJar.parse(netscape: text).jar.cookies == written.cookies.filter { !$0.isExpired(now: now) })
    }

    @Test func domainCookieReachesSubdomainsButNotOtherSites() throws {
        // GIVEN www.example.com sets a cookie for Domain=.Example.COM
        var jar = CookieJar()
        jar.receive(setCookie: "s=1; Domain=.Example.COM; Path=/", from: try url("https://www.example.com/"), now: now)

        // THEN example.com and its subdomains get it; a look-alike site does not
        #expect(jar.header(for: try url("http://example.com/a"), now: now) == "s=1")
        #expect(jar.header(for: try url("http://cdn.example.com/a"), now: now) == "s=1")
        #expect(jar.header(for: try url("http://notexample.com/a"), now: now) == nil)
    }

    @Test func aCookieForAnotherSiteOrATopLevelDomainIsRefused() throws {
        // GIVEN responses that try to set cookies beyond their own host
        var jar = CookieJar()
        let from = try url("http://www.example.com/")
        jar.receive(setCookie: "a=1; Domain=other.com", from: from, now: now)
        jar.receive(setCookie: "b=1; Domain=com", from: from, now: now)
        jar.receive(setCookie: "c=1; Domain=0.0.1", from: try url("http://127.0.0.1/"), now: now)
        jar.receive(setCookie: "secure=1; Secure", from: from, now: now)
        jar.receive(setCookie: "=nameless", from: from, now: now)
        jar.receive(setCookie: "noequals", from: from, now: now)

        // THEN none is kept (a Secure cookie needs https)
        #expect(jar.cookies.isEmpty, "\(jar.cookies)")
    }

    @Test func secureCookiesGoOverHTTPSOnly() throws {
        var jar = CookieJar()
        jar.receive(setCookie: "token=x; Secure; HttpOnly", from: try url("https://a.test/"), now: now)
        #expect(jar.header(for: try url("https://a.test/f"), now: now) == "token=x")
        #expect(jar.header(for: try url("http://a.test/f"), now: now) == nil)
        #expect(jar.cookies.first?.httpOnly == true)
    }

    @Test func expiryByMaxAgeOverExpiresAndDeletion() throws {
        // GIVEN a cookie with Max-Age 60 and an Expires in the past (Max-Age wins, whatever the order)
        var jar = CookieJar()
        let site = try url("http://a.test/")
        jar.receive(setCookie: "m=1; Max-Age=60; Expires=Wed, 21-Oct-2015 07:28:00 GMT", from: site, now: now)
        #expect(jar.cookies.first?.expires == now + 60)
        #expect(jar.header(for: site, now: now + 59) == "m=1")
        #expect(jar.header(for: site, now: now + 60) == nil)

        // WHEN the server deletes it (Max-Age=0) THEN it is gone, and the deletion is a change
        jar.receive(setCookie: "m=gone; Max-Age=0", from: site, now: now)
        #expect(jar.cookies.isEmpty)
        #expect(jar.changed.contains(Cookie.Key(name: "m", domain: "a.test", path: "/")))
    }

    @Test func aNewerCookieReplacesTheOldOneInPlace() throws {
        var jar = CookieJar()
        let site = try url("http://a.test/")
        jar.receive(setCookie: "a=1; Path=/", from: site, now: now)
        jar.receive(setCookie: "b=2; Path=/", from: site, now: now)
        jar.receive(setCookie: "a=3; Path=/", from: site, now: now)
        #expect(jar.header(for: site, now: now) == "a=3; b=2")
    }

    @Test func longerPathsComeFirst() throws {
        var jar = CookieJar()
        jar.receive(setCookie: "short=1; Path=/", from: try url("http://a.test/"), now: now)
        jar.receive(setCookie: "long=2; Path=/a/b", from: try url("http://a.test/"), now: now)
        #expect(jar.header(for: try url("http://a.test/a/b/c"), now: now) == "long=2; short=1")
    }

    @Test func valuesThatCouldBreakAHeaderAreRefused() throws {
        // GIVEN a cookie file whose value hides a header line (CR LF) THEN that line is refused, not sent
        let text = "a.test\tFALSE\t/\tFALSE\t0\tx\tok\r\na.test\tFALSE\t/\tFALSE\t0\tevil\tv\u{0D}X-Injected: 1\n"
        let (jar, invalid) = CookieJar.parse(netscape: text)
        #expect(jar.cookies.map(\.name) == ["x"])
        #expect(invalid == [2])
    }

    @Test func cookieDatesAsServersSendThem() {
        // RFC 6265 §5.1.1 reads every form below; two-digit years land in 1970-2069
        #expect(CookieDate.parse("Wed, 21 Oct 2015 07:28:00 GMT") == 1_445_412_480)
        #expect(CookieDate.parse("Wed, 21-Oct-2015 07:28:00 GMT") == 1_445_412_480)
        #expect(CookieDate.parse("Wednesday, 21-Oct-15 07:28:00 GMT") == 1_445_412_480)
        #expect(CookieDate.parse("21 oct 2015 7:28:0") == 1_445_412_480)
        #expect(CookieDate.parse("Thu, 01 Jan 70 00:00:00 GMT") == 0)
        #expect(CookieDate.parse("Wed, 30 Feb 2015 07:28:00 GMT") == nil)
        #expect(CookieDate.parse("Wed, 21 Oct 1600 07:28:00 GMT") == nil)
        #expect(CookieDate.parse("tomorrow") == nil)
        #expect(CookieDate.parse("") == nil)
    }

    @Test func netscapeFileRoundTrips() throws {
        // GIVEN a file as curl writes it: a domain cookie, a host cookie, an http-only session cookie,
        // a comment and a blank line
        let text = """
            # Netscape HTTP Cookie File

            .example.com\tTRUE\t/\tTRUE\t2000000000\tdomain\tv1
            www.example.com\tFALSE\t/app\tFALSE\t2000000000\thost\tv=2
            #HttpOnly_www.example.com\tFALSE\t/\tFALSE\t0\tsession\t
            """

        // WHEN it is read and written again
        let (jar, invalid) = CookieJar.parse(netscape: text)
        let written = jar.netscapeText(now: now)
        let (again, _) = CookieJar.parse(netscape: written)

        // THEN every field survives, and an expired cookie is not written
        #expect(invalid.isEmpty)
        #expect(jar.cookies.count == 3)
        #expect(again.cookies == jar.cookies)
        #expect(jar.cookies[0] == Cookie(name: "domain", value: "v1", domain: "example.com", hostOnly: false, path: "/", secure: true, expires: 2_000_000_000))
        #expect(jar.cookies[2].httpOnly && jar.cookies[2].expires == nil && jar.cookies[2].value.isEmpty)
        #expect(written.contains("#HttpOnly_www.example.com\tFALSE\t/\tFALSE\t0\tsession\t\n"))
        #expect(!jar.netscapeText(now: 2_000_000_000).contains("domain\tv1"))
    }

    @Test func notACookieFileShowsItsLines() {
        // GIVEN JSON, a comment, an expiry that is no number and a domain with two leading dots
        // (found by CookieFuzz: it kept a dot and no longer read back as the same cookie)
        let text = "{\"json\": true}\n# comment\na.test\tFALSE\t/\tFALSE\tsoon\tn\tv\n..a.test\tTRUE\t/\tFALSE\t0\tn\tv\n"
        let (jar, invalid) = CookieJar.parse(netscape: text)
        #expect(jar.cookies.isEmpty)
        #expect(invalid == [1, 3, 4])
    }

    @Test func mergeKeepsOtherDownloadsCookiesAndThisOnesChanges() throws {
        // GIVEN two downloads that read the same file (a=1, b=1)
        let file = "a.test\tFALSE\t/\tFALSE\t0\ta\t1\na.test\tFALSE\t/\tFALSE\t0\tb\t1\n"
        var first = CookieJar.parse(netscape: file).jar
        var second = CookieJar.parse(netscape: file).jar
        let site = try url("http://a.test/")

        // WHEN the first changes a, deletes b and writes the file; then the second gets c and writes
        first.receive(setCookie: "a=2", from: site, now: now)
        first.receive(setCookie: "b=x; Max-Age=0", from: site, now: now)
        let afterFirst = first.merged(into: CookieJar.parse(netscape: file).jar, readFromIt: true)
        second.receive(setCookie: "c=3", from: site, now: now)
        let afterSecond = second.merged(into: afterFirst, readFromIt: true)

        // THEN the file keeps the first one's a=2 and deletion of b, and adds the second one's c
        #expect(afterSecond.header(for: site, now: now) == "a=2; c=3")
    }

    @Test func aJarOtherThanTheFileReadGetsTheCookiesReadToo() throws {
        // GIVEN cookies read from one file (a=1, b=1) and a jar file that already holds b=0 and z=9
        var session = CookieJar.parse(netscape: "a.test\tFALSE\t/\tFALSE\t0\ta\t1\na.test\tFALSE\t/\tFALSE\t0\tb\t1\n").jar
        let jarFile = CookieJar.parse(netscape: "a.test\tFALSE\t/\tFALSE\t0\tb\t0\na.test\tFALSE\t/\tFALSE\t0\tz\t9\n").jar
        session.receive(setCookie: "c=3", from: try url("http://a.test/"), now: now)

        // WHEN the session is written into that jar
        let written = session.merged(into: jarFile)

        // THEN the jar gets the cookies read (a), keeps its own (b=0, z) and takes the new one (c)
        #expect(written.header(for: try url("http://a.test/"), now: now) == "b=0; z=9; a=1; c=3")
    }

    @Test func aFullJarTakesNoMore() throws {
        var jar = CookieJar()
        let site = try url("http://a.test/")
        for index in 0..<(CookieJar.maxCookies + 10) { jar.receive(setCookie: "n\(index)=v", from: site, now: now) }
        #expect(jar.cookies.count == CookieJar.maxCookies)
    }
}
