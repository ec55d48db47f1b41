import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `haul serve` over real HTTP: what a browser page, a script and a careless user can and cannot
/// make it do.
@Suite("haul serve: HTTP, WebSocket handshake and start-up rules")
struct CLIServeTests {
    @Test(.timeLimit(.minutes(1)))
    func foreignOriginsRebindingHostsAndOversizedBodiesGetJSONErrors() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-http")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { _ = try? serve.stop() }
        let call = #"{"jsonrpc":"2.0","id":1,"method":"aria2.getVersion","params":["token:s3cret"]}"#
        let rpc = serve.base + "/jsonrpc"

        // A script (no Origin) is answered
        let plain = try Curl.status(rpc, ["--data-binary", call])
        #expect(plain.status == 200 && plain.body.contains("\"version\""), "\(plain)")
        // A page of another origin (CSRF) is refused, with a JSON-RPC error body
        let foreign = try Curl.status(rpc, ["-H", "Origin: http://evil.example", "--data-binary", call])
        #expect(foreign.status == 403 && foreign.body.contains("\"error\"") && !foreign.body.contains("\"result\""), "\(foreign)")
        // A page that made its own name resolve to 127.0.0.1 (DNS rebinding) is refused
        let rebound = try Curl.status(
            rpc, ["-H", "Host: evil.example:\(serve.port)", "-H", "Origin: http://evil.example:\(serve.port)", "--data-binary", call])
        #expect(rebound.status == 403 && rebound.body.contains("\"error\""), "\(rebound)")
        // The server's own page is answered
        let own = try Curl.status(rpc, ["-H", "Origin: \(serve.base)", "--data-binary", call])
        #expect(own.status == 200 && own.body.contains("\"result\""), "\(own)")
        // A body over the limit is refused without being read whole; GET is not JSON-RPC here
        let big = work.file("big.json")
        try Data(repeating: 0x20, count: (1 << 20) + 10).write(to: URL(fileURLWithPath: big))
        let huge = try Curl.status(rpc, ["--data-binary", "@" + big])
        #expect(huge.status == 413 && huge.body.contains("\"error\""), "\(huge.status)")
        let get = try Curl.status(rpc)
        #expect(get.status == 405 && get.body.contains("\"error\""), "\(get)")
        // Malformed JSON and an unknown method: JSON-RPC errors, and the server keeps answering
        #expect(try Curl.status(rpc, ["--data-binary", "{oops"]).body.contains("-32700"))
        #expect(try Curl.status(rpc, ["--data-binary", #"{"jsonrpc":"2.0","id":2,"method":"aria2.nope","params":["token:s3cret"]}"#]).body.contains("-32601"))
        #expect(try Curl.status(rpc, ["--data-binary", call]).status == 200)
    }

    @Test(.timeLimit(.minutes(1)))
    func theDashboardIsServedFromTheBinary() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-page")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { _ = try? serve.stop() }
        let page = try Curl.status(serve.base + "/")
        #expect(page.status == 200 && page.body.contains("dashboard.js") && page.body.contains("<html"), "\(page.status)")
        let script = try Curl.status(serve.base + "/dashboard.js")
        #expect(script.status == 200 && script.body.contains("jsonrpc"))
        #expect(try Curl.status(serve.base + "/dashboard.css").status == 200)
        #expect(try Curl.status(serve.base + "/../etc/passwd", ["--path-as-is"]).status != 200)
        #expect(try Curl.status(serve.base + "/nope").status == 404)
    }

    @Test(.timeLimit(.minutes(1)))
    func aWebSocketFromAForeignOriginIsRefusedAndFromItsOwnAccepted() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-ws")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { _ = try? serve.stop() }
        func handshake(origin: String) throws -> String {
            let result = try Curl.run(
                [
                    "-s", "-i", "--http1.1", "--max-time", "2", "-H", "Connection: Upgrade", "-H", "Upgrade: websocket",
                    "-H", "Sec-WebSocket-Version: 13", "-H", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "-H", "Origin: \(origin)",
                    serve.base + "/jsonrpc",
                ])
            return result.stdoutString.components(separatedBy: "\r\n").first ?? ""
        }
        #expect(try handshake(origin: serve.base).contains(" 101"))
        #expect(try !handshake(origin: "http://evil.example").contains(" 101"))
    }

    @Test(.timeLimit(.minutes(1)))
    func jobsDefaultToAria2sFiveAndAnExplicitFourIsFour() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-jobs")
        for (extra, expected) in [([String](), "5"), (["-j", "4"], "4"), (["--jobs", "7"], "7")] {
            let serve = try ServeProcess(state: work.file("state-\(expected)"), directory: work.file("dl"), extra: extra)
            defer { _ = try? serve.stop() }
            let options = try serve.result("aria2.getGlobalOption") as? [String: Any]
            #expect(options?["max-concurrent-downloads"] as? String == expected, "\(extra): \(String(describing: options))")
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func listeningBeyondLoopbackNeedsASecretAndBadListenIsAUsageError() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-start")
        let open = try HaulBinary.run(["serve", "--listen", "0.0.0.0:0", "--state", work.file("state"), "-d", work.file("dl")], timeout: 20)
        #expect(open.status == 2 && open.stderr.contains("--secret"), "\(open.status): \(open.stderr)")
        let bad = try HaulBinary.run(["serve", "--listen", "nonsense", "--state", work.file("state")], timeout: 20)
        #expect(bad.status == 2 && bad.stderr.contains("--listen"), "\(bad.stderr)")
        // A port already taken: a clear error, not a crash
        let first = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { _ = try? first.stop() }
        let taken = try HaulBinary.run(["serve", "--listen", "127.0.0.1:\(first.port)", "--state", work.file("state2"), "-d", work.file("dl")], timeout: 20)
        #expect(taken.status == 2 && taken.stderr.contains("cannot listen"), "\(taken.status): \(taken.stderr)")
    }
}

/// Speed limits changed through the RPC while a download runs.
@Suite("haul serve: limits changed while downloading")
struct CLIServeLimitTests {
    /// Bytes the download of `gid` gained over `seconds`.
    static func gained(_ serve: ServeProcess, _ gid: String, over seconds: Double) throws -> Int64 {
        func completed() throws -> Int64 {
            let status = try serve.result("aria2.tellStatus", [gid, ["completedLength"]]) as? [String: Any]
            return Int64(status?["completedLength"] as? String ?? "") ?? -1
        }
        let before = try completed()
        usleep(UInt32(seconds * 1_000_000))
        return try completed() - before
    }

    @Test(.timeLimit(.minutes(2)))
    func changeOptionAndChangeGlobalOptionSlowARunningDownloadAtOnce() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-limits")
        let nginx = try ServedFiles.start(in: work, [("big.bin", 160 << 20, 45)], limitRate: "8m")
        defer { nginx.stop() }
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"), extra: ["-x", "1"])
        defer { _ = try? serve.stop() }

        // GIVEN a download running at the server's 8 MiB/s
        let gid = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/limited/big.bin"]]) as? String)
        #expect(Disk.waitUntil(timeout: 10) { (try? Self.gained(serve, gid, over: 0.3)) ?? 0 > 1 << 20 })
        // WHEN its own limit is set to 512 KiB/s
        #expect(try serve.result("aria2.changeOption", [gid, ["max-download-limit": "512K"]]) as? String == "OK")
        usleep(300_000)
        // THEN it slows at once (a burst of at most a few hundred KiB aside)
        let limited = try Self.gained(serve, gid, over: 2)
        #expect(limited < 1_700_000, "gained \(limited) bytes in 2 s under 512 KiB/s")
        // WHEN its own limit is lifted and the overall one set to 1 MiB/s
        #expect(try serve.result("aria2.changeOption", [gid, ["max-download-limit": "0"]]) as? String == "OK")
        #expect(try serve.result("aria2.changeGlobalOption", [["max-overall-download-limit": "1M"]]) as? String == "OK")
        usleep(300_000)
        let overall = try Self.gained(serve, gid, over: 2)
        #expect(overall > 1_000_000 && overall < 3_200_000, "gained \(overall) bytes in 2 s under 1 MiB/s overall")
        // AND lifting every limit lets it run at the server's speed again
        #expect(try serve.result("aria2.changeGlobalOption", [["max-overall-download-limit": "0"]]) as? String == "OK")
        usleep(300_000)
        let free = try Self.gained(serve, gid, over: 1)
        #expect(free > 4_000_000, "gained \(free) bytes in 1 s without a limit")
    }
}
