import Foundation
import Testing

@testable import HaulCore

@Suite("Proxies: --proxy values, and the proxy libcurl picks from options and environment (no I/O)")
struct ProxyRouteTests {
    func url(_ text: String) throws -> URL {
        try #require(URL(string: text))
    }

    @Test func acceptedProxyURLs() throws {
        for text in [
            "", "http://proxy:3128", "https://proxy.example.com", "socks5://127.0.0.1:1080", "SOCKS5H://user:p%40ss@[::1]:1080/",
        ] {
            try ProxyRoute.validate(text)
        }
    }

    @Test func refusedProxyURLsNeverShowThePassword() {
        // GIVEN values a proxy cannot be (another scheme, no scheme, no host, a bad port, a path)
        let refused = [
            "ftp://alice:s3cret@proxy:21", "alice:s3cret@proxy:3128", "http://alice:s3cret@", "http://alice:s3cret@proxy:99999",
            "http://alice:s3cret@proxy:3128/path", "http://alice:s3cret@proxy:3128?x", "socks4://alice:s3cret@proxy", "http://alice:s3cret@pro xy",
        ]
        for text in refused {
            // WHEN each is checked THEN it is refused, and the message hides the password
            let error = #expect(throws: ProxyURLError.self) { try ProxyRoute.validate(text) }
            #expect(error?.message.contains("s3cret") == false, "\(error?.message ?? "")")
            // AND it names the setting, as a setting (the command line calls it --proxy)
            #expect(error?.message.hasPrefix("transfer.proxy ") == true)
            #expect(error?.text.settings == [.proxy])
        }
    }

    @Test func environmentVariablesAsCurlReadsThem() throws {
        let plain = try url("http://files.test/a")
        let secure = try url("https://files.test/a")
        let environment = ["http_proxy": "http://p1:1", "HTTPS_PROXY": "http://p2:2", "ALL_PROXY": "socks5h://p3:3"]

        // THEN http uses http_proxy, https the capital HTTPS_PROXY
        #expect(ProxyRoute.resolve(for: plain, proxy: nil, noProxy: nil, environment: environment) == ProxyRoute(proxy: "http://p1:1", source: "http_proxy"))
        #expect(ProxyRoute.resolve(for: secure, proxy: nil, noProxy: nil, environment: environment)?.source == "HTTPS_PROXY")
        // AND HTTP_PROXY in capitals is never read (httpoxy); all_proxy is the fallback
        let capitals = ["HTTP_PROXY": "http://evil:1", "all_proxy": "socks5://p4:4"]
        #expect(ProxyRoute.resolve(for: plain, proxy: nil, noProxy: nil, environment: capitals) == ProxyRoute(proxy: "socks5://p4:4", source: "all_proxy"))
        // AND a set but empty variable means no proxy for its scheme, not the fallback
        #expect(ProxyRoute.resolve(for: plain, proxy: nil, noProxy: nil, environment: ["http_proxy": "", "all_proxy": "http://p:1"]) == nil)
    }

    @Test func theOptionWinsAndAnEmptyOneTurnsProxiesOff() throws {
        let plain = try url("http://files.test/a")
        let environment = ["http_proxy": "http://p1:1"]
        #expect(ProxyRoute.resolve(for: plain, proxy: "socks5://o:9", noProxy: nil, environment: environment)?.source == "\(setting: .proxy)")
        #expect(ProxyRoute.resolve(for: plain, proxy: "", noProxy: nil, environment: environment) == nil)
    }

    @Test func noProxyListsAsCurlMatchesThem() throws {
        let list = NoProxyList("example.com, .internal.test,10.0.0.0/8 127.0.0.1,::1")
        #expect(list.exempts(host: "example.com"))
        #expect(list.exempts(host: "WWW.Example.com"))
        #expect(!list.exempts(host: "notexample.com"))
        #expect(list.exempts(host: "a.internal.test"))
        #expect(list.exempts(host: "internal.test"))
        #expect(list.exempts(host: "10.200.3.4"))
        #expect(!list.exempts(host: "11.0.0.1"))
        #expect(list.exempts(host: "127.0.0.1"))
        #expect(!list.exempts(host: "127.0.0.2"))
        #expect(list.exempts(host: "[::1]"))
        #expect(NoProxyList("*").exempts(host: "anything.test"))
        #expect(!NoProxyList("*.test").exempts(host: "a.test"))
    }

    @Test func noProxyAppliesToTheOptionToo() throws {
        // GIVEN --proxy and no_proxy (or --noproxy, which replaces no_proxy) listing the host
        let local = try url("http://127.0.0.1:8080/f")
        #expect(ProxyRoute.resolve(for: local, proxy: "http://p:1", noProxy: nil, environment: ["no_proxy": "127.0.0.1"]) == nil)
        #expect(ProxyRoute.resolve(for: local, proxy: "http://p:1", noProxy: "*", environment: [:]) == nil)
        #expect(ProxyRoute.resolve(for: local, proxy: "http://p:1", noProxy: "other.test", environment: ["NO_PROXY": "127.0.0.1"]) != nil)
    }
}
