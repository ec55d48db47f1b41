import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `haul serve` and the values clients send: every number is range-checked where it enters (none
/// kills the server), and every option of `aria2.addUri` is honoured or refused by name, never
/// dropped. Real clients' calls against the real binary, with real proxies on loopback.
@Suite("haul serve: option values", .serialized)
struct CLIServeValuesTests {
    /// The largest speed limit Haul takes (`SpeedLimit.maximumBytesPerSecond`, 1 TiB/s).
    static let maximumSpeed: Int64 = 1 << 40
    /// Int64.max: kept as a Double it became 2^63, which no Int64 holds (SIGILL on the way back).
    static let hugeSpeed = "9223372036854775807"

    /// This process's environment without the proxy variables (a CI machine's
    /// `no_proxy=127.0.0.1` would send every request here directly).
    static var environmentWithoutProxies: [String: String] {
        let inherited = ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"]
        return ProcessInfo.processInfo.environment.filter { !inherited.contains($0.key) }
    }

    /// The error message of a reply (empty when it has none).
    static func errorMessage(_ reply: [String: Any]) -> String {
        (reply["error"] as? [String: Any])?["message"] as? String ?? ""
    }

    /// Whether the server still answers an ordinary call.
    static func answers(_ serve: ServeProcess) -> Bool {
        guard serve.running.process.isRunning, let version = try? serve.result("aria2.getVersion") as? [String: Any] else { return false }
        return version["version"] != nil
    }

    /// Polls tellStatus until `gid` is complete; its last status otherwise.
    static func waitForCompletion(_ serve: ServeProcess, _ gid: String, timeout: Double = 30) -> [String: Any] {
        var last: [String: Any] = [:]
        _ = Disk.waitUntil(timeout: timeout) {
            last = (try? serve.result("aria2.tellStatus", [gid])) as? [String: Any] ?? [:]
            return last["status"] as? String == "complete" || last["status"] as? String == "error"
        }
        return last
    }

    // MARK: item 5: no value kills the server

    @Test(.timeLimit(.minutes(1)))
    func aSpeedLimitBeyondTheBoundIsRefusedByNameAndTheServerLives() throws {
        // GIVEN haul serve
        let work = try TemporaryDirectory(prefix: "haul-serve-speed")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { _ = try? serve.stop() }

        // WHEN a client adds a download limited to Int64.max bytes per second (it killed the server)
        let huge = try serve.call("aria2.addUri", [["http://127.0.0.1:9/huge.bin"], ["max-download-limit": Self.hugeSpeed, "pause": "true"]])

        // THEN it is refused with an error that names the option and the bound, and nothing was added
        let message = Self.errorMessage(huge)
        #expect(message.contains("max-download-limit") && message.contains(String(Self.maximumSpeed)), "\(huge)")
        #expect(Self.answers(serve), "haul serve died: \(serve.running.stderr)")
        #expect((try serve.result("aria2.tellWaiting", [0, 10]) as? [Any])?.isEmpty == true)

        // WHEN the limit is the largest one taken (1048576M), or a number that K or M would overflow
        let gid = try #require(
            try serve.result("aria2.addUri", [["http://127.0.0.1:9/max.bin"], ["max-download-limit": "1048576M", "pause": "true"]]) as? String)
        let options = try #require(try serve.result("aria2.getOption", [gid]) as? [String: Any])
        // THEN the largest is kept to the byte, and the others are refused by name
        #expect(options["max-download-limit"] as? String == String(Self.maximumSpeed), "\(options)")
        for value in [Self.hugeSpeed, "8796093022208M", "9007199254740993K", "1048577M", "-1", "1.5M"] {
            let reply = try serve.call("aria2.changeOption", [gid, ["max-download-limit": value]])
            #expect(Self.errorMessage(reply).contains("max-download-limit"), "\(value): \(reply)")
        }
        let after = try #require(try serve.result("aria2.getOption", [gid]) as? [String: Any])
        #expect(after["max-download-limit"] as? String == String(Self.maximumSpeed), "\(after)")
        #expect(Self.answers(serve), "haul serve died: \(serve.running.stderr)")
    }

    @Test(.timeLimit(.minutes(1)))
    func aGlobalSpeedLimitBeyondTheBoundIsRefusedAndTheGlobalOptionsStillRead() throws {
        // GIVEN haul serve
        let work = try TemporaryDirectory(prefix: "haul-serve-global-speed")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { _ = try? serve.stop() }

        // WHEN a client sets the overall limit to Int64.max, then reads the global options (that read killed the server)
        let huge = try serve.call("aria2.changeGlobalOption", [["max-overall-download-limit": Self.hugeSpeed]])
        let read = try serve.call("aria2.getGlobalOption")

        // THEN the change is refused by name with the bound, the options are read, and nothing changed
        let message = Self.errorMessage(huge)
        #expect(message.contains("max-overall-download-limit") && message.contains(String(Self.maximumSpeed)), "\(huge)")
        #expect((read["result"] as? [String: Any])?["max-overall-download-limit"] as? String == "0", "\(read)")
        #expect(Self.answers(serve), "haul serve died: \(serve.running.stderr)")

        // WHEN it sets the largest limit taken, and an odd number of bytes
        for (given, kept) in [("1048576M", String(Self.maximumSpeed)), ("1234567", "1234567")] {
            #expect(try serve.result("aria2.changeGlobalOption", [["max-overall-download-limit": given]]) as? String == "OK")
            // THEN it reads back to the byte
            let options = try #require(try serve.result("aria2.getGlobalOption") as? [String: Any])
            #expect(options["max-overall-download-limit"] as? String == kept, "\(given): \(options)")
        }
        // AND a concurrency out of range is refused by name, the others unchanged
        for value in ["0", "-3", Self.hugeSpeed, "many"] {
            let reply = try serve.call("aria2.changeGlobalOption", [["max-concurrent-downloads": value]])
            #expect(Self.errorMessage(reply).contains("max-concurrent-downloads"), "\(value): \(reply)")
        }
        #expect(Self.answers(serve), "haul serve died: \(serve.running.stderr)")
    }

    @Test(.timeLimit(.minutes(1)))
    func aLimitRateBeyondTheBoundOrBelowOneByteIsAUsageError() throws {
        let work = try TemporaryDirectory(prefix: "haul-limit-rate")
        // GIVEN --limit-rate values above 1 TiB/s, and below one byte per second
        for (arguments, wanted) in [
            (["serve", "--listen", "127.0.0.1:0", "--state", work.file("state")], "1024G"),
            (["--retry", "0", "-o", work.file("a.bin"), "http://127.0.0.1:9/a.bin"], "1024G"),
            (["queue", "run", "--state", work.file("state")], "1024G"),
        ] {
            for rate in [Self.hugeSpeed, "1025G", "2000000000000"] {
                // WHEN haul is given one
                let result = try HaulBinary.run(arguments + ["--limit-rate", rate], timeout: 30)
                // THEN it is a usage error (exit 2) that names the flag and the bound
                #expect(result.status == 2, "\(arguments) --limit-rate \(rate): \(result.stderr)")
                #expect(result.stderr.contains("--limit-rate") && result.stderr.contains(wanted), "\(result.stderr)")
            }
        }
        let tiny = try HaulBinary.run(["--retry", "0", "--limit-rate", "0.5", "-o", work.file("b.bin"), "http://127.0.0.1:9/b.bin"], timeout: 30)
        #expect(tiny.status == 2, "\(tiny.stderr)")
        #expect(tiny.stderr.contains("--limit-rate"), "\(tiny.stderr)")
        #expect(!Disk.exists(work.file("a.bin")) && !Disk.exists(work.file("b.bin")))
    }

    // MARK: item 6: an option is honoured or refused, never dropped

    @Test(.timeLimit(.minutes(1)))
    func unknownOptionsAndDryRunAreRefusedByNameAndNothingIsAdded() throws {
        // GIVEN haul serve
        let work = try TemporaryDirectory(prefix: "haul-serve-unknown")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { _ = try? serve.stop() }

        // WHEN a client adds with an option Haul does not know, one it cannot honour, or a
        // proxy's password without its proxy
        let refused: [(options: [String: Any], name: String)] = [
            (["no-such-option": "1"], "no-such-option"),
            (["dry-run": "true"], "dry-run"),
            (["max-tries": "3"], "max-tries"),
            (["all-proxy-passwd": "pw"], "all-proxy-passwd"),
            (["pause": "maybe"], "pause"),
            (["all-proxy": "ftp://127.0.0.1:21"], "all-proxy"),
        ]
        for (options, name) in refused {
            let reply = try serve.call("aria2.addUri", [["http://127.0.0.1:9/f.bin"], options.merging(["pause": "true"]) { old, _ in old }])
            // THEN each is refused with an error that names the option
            #expect(Self.errorMessage(reply).contains(name), "\(options): \(reply)")
        }
        // AND nothing was added
        #expect((try serve.result("aria2.tellWaiting", [0, 10]) as? [Any])?.isEmpty == true)

        // WHEN the options are ones that mean nothing for an HTTP download (BitTorrent, Metalink,
        // FTP, uploading), or aria2's defaults that Haul keeps anyway
        let ignored: [String: Any] = [
            "bt-tracker": "udp://tracker.example:80", "seed-time": "0", "follow-torrent": "true", "metalink-language": "en",
            "ftp-pasv": "true", "max-upload-limit": "1M", "dry-run": "false", "all-proxy": "", "pause": "true",
        ]
        // THEN the download is added
        let gid = try serve.call("aria2.addUri", [["http://127.0.0.1:9/g.bin"], ignored])
        #expect(gid["result"] as? String != nil, "\(gid)")
    }

    @Test(.timeLimit(.minutes(1)))
    func splitAboveSixteenIsClampedAndGetOptionSaysSo() throws {
        // GIVEN haul serve
        let work = try TemporaryDirectory(prefix: "haul-serve-split")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { _ = try? serve.stop() }

        // WHEN a client whose defaults are split=32 and 64 connections per server adds a download
        let gid = try serve.call("aria2.addUri", [["http://127.0.0.1:9/s.bin"], ["split": "32", "max-connection-per-server": 64, "pause": "true"]])

        // THEN it is added, and getOption reports the 16 connections Haul will use
        let added = try #require(gid["result"] as? String, "\(gid)")
        let options = try #require(try serve.result("aria2.getOption", [added]) as? [String: Any])
        #expect(options["split"] as? String == "16", "\(options)")
        #expect(options["max-connection-per-server"] as? String == "16", "\(options)")
        // AND a count that is no count is still refused by name
        for value in ["0", "-1", "many"] {
            let reply = try serve.call("aria2.addUri", [["http://127.0.0.1:9/t.bin"], ["split": value, "pause": "true"]])
            #expect(Self.errorMessage(reply).contains("split"), "\(value): \(reply)")
        }
    }

    @Test(.timeLimit(.minutes(2)))
    func proxyOptionsTakeTheDownloadThroughTheProxyAndThePasswordStaysSecret() throws {
        // GIVEN nginx on 127.0.0.1, tinyproxy with a login (from 127.0.0.3), microsocks with a
        // login (from 127.0.0.2), and haul serve in an environment that names no proxy
        let fixture = try CLIProxyTests.Fixture()
        let http = try HTTPProxy(user: "bob", password: "pw-http-41")
        let socks = try SocksProxy(user: "alice", password: "pw-socks-42")
        let work = try TemporaryDirectory(prefix: "haul-serve-proxy")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"), environment: Self.environmentWithoutProxies)
        // Stopped once only: a second stop would wait for an exit that was already seen.
        var stopped = false
        defer { if !stopped { _ = try? serve.stop() } }
        let cases: [(name: String, options: [String: Any], from: String)] = [
            (
                "all-proxy with its user and password options", ["all-proxy": http.url(), "all-proxy-user": "bob", "all-proxy-passwd": "pw-http-41"],
                "127.0.0.3"
            ),
            ("http-proxy with the login in its URL", ["http-proxy": socks.url(scheme: "socks5h", user: "alice", password: "pw-socks-42")], "127.0.0.2"),
            (
                "http-proxy over all-proxy for an http URI",
                ["all-proxy": socks.url(), "http-proxy": "127.0.0.1:\(http.port)", "http-proxy-user": "bob", "http-proxy-passwd": "pw-http-41"],
                "127.0.0.3"
            ),
            ("https-proxy alone is not for an http URI", ["https-proxy": http.url(user: "bob", password: "pw-http-41")], "127.0.0.1"),
            ("no-proxy lists the host", ["all-proxy": http.url(user: "bob", password: "pw-http-41"), "no-proxy": "127.0.0.1"], "127.0.0.1"),
        ]
        for (index, testCase) in cases.enumerated() {
            // WHEN a client adds a download with those options
            let uri = "/small.bin?case=\(index)"
            let reply = try serve.call("aria2.addUri", [[fixture.url(uri)], testCase.options.merging(["out": "case\(index).bin"]) { old, _ in old }])
            let gid = try #require(reply["result"] as? String, "\(testCase.name): \(reply)")
            let options = try serve.call("aria2.getOption", [gid])
            let status = Self.waitForCompletion(serve, gid)

            // THEN it completes bit-exact, and the request came the way the options said
            #expect(status["status"] as? String == "complete", "\(testCase.name): \(status)")
            #expect(Disk.difference(work.file("dl/case\(index).bin"), fixture.small) == nil, "\(testCase.name)")
            #expect(fixture.clients(of: uri) == [testCase.from], "\(testCase.name)")
            // AND no answer shows a password
            let shown = String(describing: options) + String(describing: status)
            #expect(!shown.contains("pw-http-41") && !shown.contains("pw-socks-42"), "\(testCase.name): \(shown)")
        }
        #expect(http.requestLines().contains("GET \(fixture.url("/small.bin?case=0")) HTTP/1.1"), "\(http.log())")
        #expect(socks.connectedTargets().contains("127.0.0.1:\(fixture.nginx.port)"), "\(socks.log())")
        // AND once the downloads are done, the store no longer holds the passwords
        stopped = true
        try serve.stop()
        for file in [work.file("state") + "/haul.sqlite", work.file("state") + "/haul.sqlite-wal"] {
            let data = FileManager.default.contents(atPath: file) ?? Data()
            #expect(data.range(of: Data("pw-http-41".utf8)) == nil, "\(file)")
            #expect(data.range(of: Data("pw-socks-42".utf8)) == nil, "\(file)")
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aProxyForEveryURIOrNoneAndAProxyThatIsNoURLIsRefused() throws {
        // GIVEN haul serve
        let work = try TemporaryDirectory(prefix: "haul-serve-proxy-refused")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"), environment: Self.environmentWithoutProxies)
        defer { _ = try? serve.stop() }

        // WHEN the URIs of one download would go different ways (an http URI through http-proxy, an
        // https mirror directly), or a proxy is no proxy URL Haul can use (its password inside)
        let mixed = try serve.call(
            "aria2.addUri", [["http://127.0.0.1:9/m.bin", "https://127.0.0.1:9/m.bin"], ["http-proxy": "http://127.0.0.1:3128", "pause": "true"]])
        let bad = try serve.call("aria2.addUri", [["http://127.0.0.1:9/b.bin"], ["all-proxy": "socks4://u:pw-bad-77@127.0.0.1:1080", "pause": "true"]])

        // THEN both are refused by name, and the password is not shown
        #expect(Self.errorMessage(mixed).contains("http-proxy"), "\(mixed)")
        #expect(Self.errorMessage(bad).contains("all-proxy"), "\(bad)")
        #expect(!Self.errorMessage(bad).contains("pw-bad-77"), "\(bad)")
        #expect((try serve.result("aria2.tellWaiting", [0, 10]) as? [Any])?.isEmpty == true)
    }
}
