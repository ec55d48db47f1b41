import Foundation
import HaulTestSupport
import Testing

/// `haul` through real proxies on loopback: microsocks (SOCKS5) connects to servers from
/// 127.0.0.2 and tinyproxy (HTTP) from 127.0.0.3, so nginx's log (`$remote_addr`) proves which way
/// each request went; a direct request comes from 127.0.0.1.
@Suite("haul through proxies: --proxy, --noproxy and the environment", .serialized)
struct CLIProxyTests {
    static let direct = "127.0.0.1"

    /// Runs `haul` with the proxy variables of this process's environment removed (a CI machine's
    /// `no_proxy=127.0.0.1` would send every request here directly) and `environment` added.
    static func haul(_ arguments: [String], environment: [String: String] = [:]) throws -> ProcessResult {
        let inherited = ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"]
        var merged = ProcessInfo.processInfo.environment.filter { !inherited.contains($0.key) }
        merged.merge(environment) { $1 }
        return try ProcessRunner.run(try HaulBinary.path(), arguments, environment: merged, timeout: 60)
    }

    /// nginx on 127.0.0.1 serving `small.bin` (64 KiB) and `big.bin` (12 MiB), and a directory for outputs.
    struct Fixture {
        let root: TemporaryDirectory
        let work: TemporaryDirectory
        let nginx: NginxServer
        let small = TestData.bytes(count: 64 << 10, seed: 301)
        let big = TestData.bytes(count: 12 << 20, seed: 302)

        init(tls: NginxTLS? = nil) throws {
            root = try TemporaryDirectory(prefix: "haul-proxy-root")
            try Disk.write(small, to: root.file("small.bin"))
            try Disk.write(big, to: root.file("big.bin"))
            nginx = try NginxServer(documentRoot: root.path, tls: tls)
            work = try TemporaryDirectory(prefix: "haul-proxy-out")
        }

        /// `http://HOST:PORT/PATH` on this nginx (`localhost` lets a socks5h proxy resolve the name).
        func url(_ path: String, host: String = "127.0.0.1") -> String {
            nginx.baseURL.replacingOccurrences(of: "127.0.0.1", with: host) + path
        }

        /// Where the requests for `uri` came from (nginx logs a request when it ends).
        func clients(of uri: String, atLeast count: Int = 1) -> [String] {
            _ = Disk.waitUntil(timeout: 5) { nginx.accessLog().filter { $0.uri == uri }.count >= count }
            return nginx.accessLog().filter { $0.uri == uri }.map(\.clientAddress)
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func socks5hCarriesEverySegmentAndTheProxyResolvesTheName() throws {
        // GIVEN nginx and microsocks (outgoing from 127.0.0.2)
        let fixture = try Fixture()
        let socks = try SocksProxy()
        let output = fixture.work.file("big.bin")

        // WHEN haul fetches http://localhost:PORT/big.bin over 4 connections through socks5h://
        let result = try Self.haul([
            "-q", "-x", "4", "--retry", "0", "--proxy", socks.url(scheme: "socks5h"), "-o", output, fixture.url("/big.bin", host: "localhost"),
        ])

        // THEN the file is bit-exact, every request (segments included) came from the proxy, and
        // the proxy was given the host name to resolve, never an address
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, fixture.big) == nil)
        let clients = fixture.clients(of: "/big.bin", atLeast: 2)
        #expect(clients.count > 1, "the download should have used several connections: \(clients)")
        #expect(Set(clients) == ["127.0.0.2"], "\(clients)")
        let targets = socks.connectedTargets()
        #expect(!targets.isEmpty && Set(targets) == ["localhost:\(fixture.nginx.port)"], "\(socks.log())")
    }

    @Test(.timeLimit(.minutes(1)))
    func socks5ResolvesLocallyLogsInAndNeverShowsThePassword() throws {
        // GIVEN microsocks that wants a login
        let fixture = try Fixture()
        let socks = try SocksProxy(user: "alice", password: "s3cret-socks")
        let output = fixture.work.file("small.bin")

        // WHEN haul logs in through socks5:// (haul resolves the name) with --json output
        let proxy = socks.url(scheme: "socks5", user: "alice", password: "s3cret-socks")
        let result = try Self.haul(["--json", "--retry", "0", "--proxy", proxy, "-o", output, fixture.url("/small.bin", host: "localhost")])

        // THEN the request went through the proxy to the address haul resolved, and no output shows the password
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, fixture.small) == nil)
        #expect(fixture.clients(of: "/small.bin") == ["127.0.0.2"])
        #expect(socks.connectedTargets() == ["127.0.0.1:\(fixture.nginx.port)"], "\(socks.log())")
        #expect(!(result.stdoutString + result.stderr).contains("s3cret-socks"))

        // WHEN the password is wrong (default retries)
        let started = ContinuousClock.now
        let refused = try Self.haul([
            "--proxy", socks.url(scheme: "socks5", user: "alice", password: "wrong-pass"), "-o", fixture.work.file("again.bin"),
            fixture.url("/small.bin"),
        ])

        // THEN it is a network error at once (a refused login is not retried), naming the proxy without the password
        #expect(refused.status == 3, "stderr: \(refused.stderr)")
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(refused.stderr.contains("the proxy socks5://alice:***@127.0.0.1:\(socks.port) (from --proxy) failed"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("wrong-pass"))
    }

    @Test(.timeLimit(.minutes(1)))
    func httpProxyForwardsPlainRequestsAndTunnelsTLS() throws {
        // GIVEN tinyproxy that wants Basic credentials, nginx over http, and nginx over https with a throwaway CA
        let fixture = try Fixture()
        let certificates = try TemporaryDirectory(prefix: "haul-proxy-certs")
        let made = try TestCertificates.make(in: certificates.path)
        let secure = try Fixture(tls: NginxTLS(certificatePath: made.serverCert, keyPath: made.serverKey))
        let proxy = try HTTPProxy(user: "bob", password: "s3cret-http")
        let proxyURL = proxy.url(user: "bob", password: "s3cret-http")

        // WHEN haul fetches an http URL and an https URL through it
        let plain = try Self.haul(["-q", "--retry", "0", "--proxy", proxyURL, "-o", fixture.work.file("plain.bin"), fixture.url("/small.bin")])
        let tunnelled = try Self.haul([
            "--json", "--retry", "0", "--cacert", made.caCert, "--proxy", proxyURL, "-o", fixture.work.file("tls.bin"), secure.url("/small.bin"),
        ])

        // THEN both are bit-exact and came from the proxy: the http request forwarded, the https one tunnelled (CONNECT)
        #expect(plain.status == 0, "stderr: \(plain.stderr)")
        #expect(tunnelled.status == 0, "stderr: \(tunnelled.stderr)")
        #expect(Disk.difference(fixture.work.file("plain.bin"), fixture.small) == nil)
        #expect(Disk.difference(fixture.work.file("tls.bin"), secure.small) == nil)
        // AND the response judged is the server's, not the proxy's "200 Connection established"
        let response = JSONLines.parse(tunnelled.stdoutString).first { $0["event"] as? String == "response" }
        #expect((response?["totalBytes"] as? NSNumber)?.intValue == secure.small.count, "\(tunnelled.stdoutString)")
        #expect(fixture.clients(of: "/small.bin") == ["127.0.0.3"])
        #expect(secure.clients(of: "/small.bin") == ["127.0.0.3"])
        let lines = proxy.requestLines()
        #expect(lines.contains("GET \(fixture.url("/small.bin")) HTTP/1.1"), "\(proxy.log())")
        #expect(lines.contains("CONNECT 127.0.0.1:\(secure.nginx.port) HTTP/1.1"), "\(proxy.log())")
    }

    @Test(.timeLimit(.minutes(1)))
    func anHTTPSProxyIsReachedOverTLSWithTheSameTrustAsTheServer() throws {
        // GIVEN tinyproxy behind TLS (a certificate for 127.0.0.1 from a throwaway CA), with a login
        let fixture = try Fixture()
        let certificates = try TemporaryDirectory(prefix: "haul-proxy-certs")
        let made = try TestCertificates.make(in: certificates.path)
        let proxy = try HTTPProxy(user: "bob", password: "s3cret-tls")
        let front = try TLSProxyFront(certificatePath: made.serverCert, keyPath: made.serverKey, targetPort: proxy.port)
        let proxyURL = front.url(user: "bob", password: "s3cret-tls")

        // WHEN haul goes through https://127.0.0.1:PORT without trusting the CA, then with --cacert
        let untrusted = try Self.haul(["--retry", "0", "--proxy", proxyURL, "-o", fixture.work.file("a.bin"), fixture.url("/small.bin")])
        let trusted = try Self.haul([
            "-q", "--retry", "0", "--cacert", made.caCert, "--proxy", proxyURL, "-o", fixture.work.file("b.bin"), fixture.url("/small.bin"),
        ])

        // THEN the first is refused before any request (exit 3, the proxy named without its
        // password), the second comes through the proxy bit-exact
        #expect(untrusted.status == 3, "stderr: \(untrusted.stderr)")
        #expect(untrusted.stderr.contains("https://bob:***@127.0.0.1:\(front.port) (from --proxy)"), "\(untrusted.stderr)")
        #expect(!untrusted.stderr.contains("s3cret-tls"))
        #expect(trusted.status == 0, "stderr: \(trusted.stderr)")
        #expect(Disk.difference(fixture.work.file("b.bin"), fixture.small) == nil)
        #expect(fixture.clients(of: "/small.bin") == ["127.0.0.3"])
        #expect(proxy.requestLines() == ["GET \(fixture.url("/small.bin")) HTTP/1.1"], "\(proxy.log())")
    }

    @Test(.timeLimit(.minutes(1)))
    func anHTTPProxyThatWantsALoginRefusesWithoutOne() throws {
        // GIVEN tinyproxy that wants credentials, and none given (default retries)
        let fixture = try Fixture()
        let proxy = try HTTPProxy(user: "bob", password: "s3cret-http")
        let started = ContinuousClock.now

        // WHEN haul fetches an http URL (the proxy answers it) and an https URL (the proxy refuses the tunnel)
        let plain = try Self.haul(["--proxy", proxy.url(), "-o", fixture.work.file("a.bin"), fixture.url("/small.bin")])
        let tunnelled = try Self.haul(["--proxy", proxy.url(), "-o", fixture.work.file("b.bin"), "https://127.0.0.1:\(fixture.nginx.port)/small.bin"])

        // THEN the first is the proxy's HTTP error (exit 4), the second a refused tunnel (exit 3);
        // neither is retried, and nothing reached the server
        #expect(plain.status == 4, "stderr: \(plain.stderr)")
        #expect(plain.stderr.contains("407 Proxy Authentication Required"), "\(plain.stderr)")
        #expect(tunnelled.status == 3, "stderr: \(tunnelled.stderr)")
        #expect(tunnelled.stderr.contains("the proxy \(proxy.url()) (from --proxy) failed: CONNECT tunnel failed, response 407"), "\(tunnelled.stderr)")
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(fixture.nginx.accessLog().isEmpty)
    }

    @Test(.timeLimit(.minutes(2)))
    func theEnvironmentChoosesTheProxyAsCurlDoes() throws {
        // GIVEN nginx, tinyproxy (from 127.0.0.3) and microsocks (from 127.0.0.2)
        let fixture = try Fixture()
        let http = try HTTPProxy()
        let socks = try SocksProxy()
        let cases: [(name: String, environment: [String: String], options: [String], from: String)] = [
            ("http_proxy", ["http_proxy": http.url()], [], "127.0.0.3"),
            ("all_proxy", ["all_proxy": socks.url(scheme: "socks5h")], [], "127.0.0.2"),
            ("http_proxy over all_proxy", ["http_proxy": http.url(), "ALL_PROXY": socks.url()], [], "127.0.0.3"),
            ("no_proxy", ["http_proxy": http.url(), "no_proxy": "localhost,127.0.0.1"], [], Self.direct),
            ("--noproxy '*'", ["http_proxy": http.url()], ["--noproxy", "*"], Self.direct),
            ("--noproxy over no_proxy", ["http_proxy": http.url(), "no_proxy": "127.0.0.1"], ["--noproxy", "example.com"], "127.0.0.3"),
            ("--proxy ''", ["http_proxy": http.url()], ["--proxy", ""], Self.direct),
            ("--proxy over http_proxy", ["http_proxy": http.url()], ["--proxy", socks.url()], "127.0.0.2"),
            ("HTTP_PROXY in capitals is never read", ["HTTP_PROXY": http.url()], [], Self.direct),
        ]
        for (index, testCase) in cases.enumerated() {
            // WHEN haul runs with that environment and those options
            let uri = "/small.bin?case=\(index)"
            let output = fixture.work.file("case\(index).bin")
            let result = try Self.haul(["-q", "--retry", "0"] + testCase.options + ["-o", output, fixture.url(uri)], environment: testCase.environment)

            // THEN the request came the way curl would have sent it
            #expect(result.status == 0, "\(testCase.name): \(result.stderr)")
            #expect(Disk.difference(output, fixture.small) == nil, "\(testCase.name)")
            #expect(fixture.clients(of: uri) == [testCase.from], "\(testCase.name)")
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func anUnreachableProxyIsANetworkErrorThatNamesItWithoutThePassword() throws {
        // GIVEN a loopback port where nothing listens
        let fixture = try Fixture()
        let closed = try RefusingPort()

        // WHEN haul is told to use it, by --proxy and by https_proxy
        let byOption = try Self.haul([
            "--json", "--retry", "0", "--proxy", "http://alice:s3cret@127.0.0.1:\(closed.port)", "-o", fixture.work.file("a.bin"), fixture.url("/small.bin"),
        ])
        let byEnvironment = try Self.haul(
            ["--retry", "0", "-o", fixture.work.file("b.bin"), "https://127.0.0.1:\(fixture.nginx.port)/small.bin"],
            environment: ["https_proxy": "socks5h://carol:hidden-pw@127.0.0.1:\(closed.port)"])

        // THEN each exits 3 with a message that names the proxy and where it came from, never the
        // password (with --json, the message is in the failed event)
        #expect(byOption.status == 3, "stderr: \(byOption.stderr)")
        let failed = JSONLines.parse(byOption.stdoutString).last { $0["event"] as? String == "failed" }
        let message = failed?["message"] as? String ?? ""
        #expect(message.contains("cannot reach the proxy http://alice:***@127.0.0.1:\(closed.port) (from --proxy)"), "\(byOption.stdoutString)")
        #expect(!(byOption.stdoutString + byOption.stderr).contains("s3cret"))
        #expect(byEnvironment.status == 3, "stderr: \(byEnvironment.stderr)")
        #expect(byEnvironment.stderr.contains("socks5h://carol:***@127.0.0.1:\(closed.port) (from https_proxy)"), "\(byEnvironment.stderr)")
        #expect(!byEnvironment.stderr.contains("hidden-pw"))
        // AND nothing reached the server, and nothing was left behind
        #expect(fixture.nginx.accessLog().isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.work.path).isEmpty)
    }

    @Test func aProxyValueThatIsNoProxyURLIsAUsageError() throws {
        // GIVEN values that name no usable proxy, each with a password
        let work = try TemporaryDirectory(prefix: "haul-proxy-usage")
        let values = [
            "ftp://u:pw-one@proxy:21", "u:pw-two@proxy:3128", "http://u:pw-three@", "http://u:pw-four@proxy:70000", "socks4://u:pw-five@proxy:1080",
        ]
        for value in values {
            // WHEN haul (and queue add) is given it
            let download = try Self.haul(["--proxy", value, "-o", work.file("f"), "http://127.0.0.1:9/f"])
            let queued = try Self.haul(["queue", "add", "--state", work.file("state"), "--proxy", value, "-o", work.file("f"), "http://127.0.0.1:9/f"])

            // THEN both exit 2 before anything is done, and the message does not show the password
            for result in [download, queued] {
                #expect(result.status == 2, "\(value): \(result.stderr)")
                #expect(result.stderr.contains("--proxy"), "\(result.stderr)")
                #expect(!result.stderr.contains("pw-"), "\(result.stderr)")
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: work.path).isEmpty)
    }

    @Test(.timeLimit(.minutes(1)))
    func aQueuedDownloadKeepsItsProxyAndForgetsThePasswordWhenDone() throws {
        // GIVEN microsocks with a login, and a download queued through it
        let fixture = try Fixture()
        let socks = try SocksProxy(user: "alice", password: "q-secret-77")
        let state = fixture.work.file("state")
        let output = fixture.work.file("queued.bin")
        let proxy = socks.url(scheme: "socks5h", user: "alice", password: "q-secret-77")
        let added = try Self.haul(["queue", "add", "--state", state, "--proxy", proxy, "-o", output, fixture.url("/small.bin", host: "localhost")])
        #expect(added.status == 0, "stderr: \(added.stderr)")
        let list = try Self.haul(["queue", "list", "--json", "--state", state])
        #expect(!(list.stdoutString + list.stderr).contains("q-secret-77"))

        // WHEN the queue runs (in an environment that names no proxy)
        let run = try Self.haul(["queue", "run", "--json", "--retry", "0", "--state", state])

        // THEN the download went through the stored proxy, nothing printed the password, and the
        // database no longer holds it
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(Disk.difference(output, fixture.small) == nil)
        #expect(fixture.clients(of: "/small.bin") == ["127.0.0.2"])
        #expect(!(run.stdoutString + run.stderr).contains("q-secret-77"))
        for file in [state + "/haul.sqlite", state + "/haul.sqlite-wal"] {
            let data = FileManager.default.contents(atPath: file) ?? Data()
            #expect(data.range(of: Data("q-secret-77".utf8)) == nil, "\(file)")
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aBatchFromAListGoesThroughTheProxy() throws {
        // GIVEN a list of two URLs and tinyproxy
        let fixture = try Fixture()
        let proxy = try HTTPProxy()
        let list = fixture.work.file("list.txt")
        try "\(fixture.url("/small.bin")) one.bin\n\(fixture.url("/big.bin")) two.bin\n".write(toFile: list, atomically: true, encoding: .utf8)
        let directory = fixture.work.file("out")

        // WHEN the batch runs with --proxy
        let result = try Self.haul([
            "-q", "--retry", "0", "--state", fixture.work.file("state"), "--proxy", proxy.url(), "-d", directory, "-i", list,
        ])

        // THEN both files came through the proxy
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(directory + "/one.bin", fixture.small) == nil)
        #expect(Disk.difference(directory + "/two.bin", fixture.big) == nil)
        #expect(Set(fixture.clients(of: "/small.bin") + fixture.clients(of: "/big.bin")) == ["127.0.0.3"])
    }
}
