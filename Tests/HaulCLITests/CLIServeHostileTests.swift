import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `haul serve` tried as a hostile local process would: most of it without the token, every
/// number and nesting a client can send, over real sockets against the real binary.
@Suite("haul serve: hostile clients")
struct CLIServeHostileTests {
    /// The server still answers an ordinary call (it did not crash or lock up).
    static func answers(_ serve: ServeProcess) throws -> Bool {
        let version = try serve.result("aria2.getVersion") as? [String: Any]
        return version?["version"] != nil
    }

    @Test(.timeLimit(.minutes(1)))
    func deeplyNestedJSONGetsAnErrorAndTheServerLives() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-nested")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { _ = try? serve.stop() }
        let rpc = serve.base + "/jsonrpc"

        // GIVEN bodies nested 64 and 100,000 levels deep, sent without a token (45 crashed it)
        for depth in [64, 100_000] {
            let body = String(repeating: "[", count: depth)
            // WHEN posted
            let reply = try Curl.status(rpc, ["--data-binary", body])
            // THEN the answer is a JSON-RPC error, and the server lives
            #expect(reply.body.contains("\"error\""), "depth \(depth): \(reply.status) \(reply.body)")
            #expect(try Self.answers(serve), "haul serve died after a body nested \(depth) deep")
        }
        // AND a request nested as deep as the limit allows still works
        var nested = "1"
        for _ in 0..<30 { nested = "[" + nested + "]" }
        let deepID = try Curl.status(rpc, ["--data-binary", #"{"jsonrpc":"2.0","id":1,"method":"system.listMethods","params":["# + nested + "]}"])
        #expect(deepID.body.contains("\"result\""), "\(deepID.body)")

        // GIVEN the same over a WebSocket, as one message
        let socket = try RawClient(port: serve.port)
        try socket.handshake(port: serve.port)
        try socket.sendText(String(repeating: "[", count: 64) + String(repeating: "]", count: 64))
        // THEN it gets an error answer on that socket, and everyone else is still answered
        let answer = socket.text(timeout: 10)
        #expect(answer?.contains("\"error\"") == true, "\(answer ?? "connection closed")")
        #expect(try Self.answers(serve))
    }

    @Test(.timeLimit(.minutes(1)))
    func numbersAtTheEdgesOfInt64AreAnsweredNotTrapped() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-numbers")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { _ = try? serve.stop() }
        let gids = try (0..<3).map { index in
            try #require(try serve.result("aria2.addUri", [["http://127.0.0.1:9/n\(index)"], ["pause": "true"]]) as? String)
        }
        let maximum = Int64.max
        let minimum = Int64.min

        // WHEN a client sends offsets, counts and positions at the ends of Int64
        for (offset, count) in [(1, maximum), (maximum, maximum), (minimum, maximum), (-1, maximum), (minimum, 1), (0, minimum)] {
            let reply = try serve.call("aria2.tellWaiting", [offset, count, ["gid"]])
            #expect(reply["result"] != nil, "tellWaiting(\(offset), \(count)): \(reply)")
        }
        // THEN the windows are still aria2's: from the second one to the end, and the last one backwards
        let fromSecond = try serve.result("aria2.tellWaiting", [1, maximum, ["gid"]]) as? [[String: String]]
        #expect(fromSecond?.map { $0["gid"] } == Array(gids.dropFirst()))
        let backwards = try serve.result("aria2.tellWaiting", [-1, maximum, ["gid"]]) as? [[String: String]]
        #expect(backwards?.map { $0["gid"] } == gids.reversed())
        for how in ["POS_CUR", "POS_END", "POS_SET"] {
            for position in [maximum, minimum] {
                let reply = try serve.call("aria2.changePosition", [gids[1], position, how])
                #expect(reply["result"] as? Int != nil, "changePosition(\(position), \(how)): \(reply)")
            }
        }
        // AND the server lives, with every download still listed
        #expect(try Self.answers(serve))
        let all = try serve.result("aria2.tellWaiting", [0, 10, ["gid"]]) as? [[String: String]]
        #expect(Set(all?.compactMap { $0["gid"] } ?? []) == Set(gids))
    }

    @Test(.timeLimit(.minutes(1)))
    func forgettingAFailedResultKeepsItsPartial() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-forget")
        let nginx = try ServedFiles.start(in: work, [("ck.bin", 1 << 20, 7), ("ck2.bin", 1 << 20, 8)], limitRate: "8m")
        defer { nginx.stop() }
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { _ = try? serve.stop() }
        let wrong = "sha-256=" + String(repeating: "0", count: 64)

        for (name, forget) in [("ck.bin", "aria2.purgeDownloadResult"), ("ck2.bin", "aria2.removeDownloadResult")] {
            // GIVEN a download that failed its checksum, its data kept
            let gid = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/" + name], ["checksum": wrong]]) as? String)
            let failed = Disk.waitUntil(timeout: 20) {
                ((try? serve.result("aria2.tellStatus", [gid, ["status"]])) as? [String: String])?["status"] == "error"
            }
            #expect(failed)
            let message = ((try? serve.result("aria2.tellStatus", [gid, ["errorMessage"]])) as? [String: String])?["errorMessage"] ?? ""
            let kept = try #require(message.range(of: #"kept in /[^ ;]*[^ ;.]"#, options: .regularExpression), "\(message)")
            let partial = String(message[kept].dropFirst("kept in ".count))
            #expect(FileManager.default.fileExists(atPath: partial), "\(partial)")
            // WHEN the client forgets the result (AriaNg's "clear stopped")
            let reply = try serve.call(forget, forget == "aria2.purgeDownloadResult" ? [] : [gid])
            #expect(reply["result"] as? String == "OK", "\(reply)")
            // THEN the result is gone and the data is not
            #expect(try serve.call("aria2.tellStatus", [gid])["error"] != nil)
            #expect(FileManager.default.fileExists(atPath: partial), "\(forget) deleted \(partial)")
        }
    }

    @Test(.timeLimit(.minutes(2)))
    func aPausedDownloadsFiguresStayPutAndUnpauseAllResumesIt() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-paused")
        let nginx = try ServedFiles.start(in: work, [("slow.bin", 64 << 20, 21)], limitRate: "4m")
        defer { nginx.stop() }
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"), extra: ["-x", "1"])
        defer { _ = try? serve.stop() }
        func status(_ gid: String) throws -> [String: String] {
            try serve.result("aria2.tellStatus", [gid, ["status", "completedLength"]]) as? [String: String] ?? [:]
        }
        // GIVEN a download running (not yet at its first progress write to the store)
        let gid = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/limited/slow.bin"]]) as? String)
        #expect(Disk.waitUntil(timeout: 10) { Int((try? status(gid))?["completedLength"] ?? "") ?? 0 > 1 << 20 })

        // WHEN it is paused
        #expect(try serve.result("aria2.pause", [gid]) as? String == gid)
        // THEN from the answer on, it is paused and its figures do not move
        #expect(try status(gid)["status"] == "paused")
        var seen: [String] = []
        for _ in 0..<8 {
            seen.append(try status(gid)["completedLength"] ?? "?")
            usleep(250_000)
        }
        #expect(Set(seen).count == 1, "completedLength moved while paused: \(seen)")

        // WHEN it runs again, and pauseAll and unpauseAll follow each other at once
        #expect(try serve.result("aria2.unpause", [gid]) as? String == gid)
        #expect(Disk.waitUntil(timeout: 10) { (try? status(gid))?["status"] == "active" })
        #expect(try serve.result("aria2.pauseAll") as? String == "OK")
        #expect(try serve.result("aria2.unpauseAll") as? String == "OK")
        // THEN it is active again at once, as aria2 makes it
        #expect(Disk.waitUntil(timeout: 3) { (try? status(gid))?["status"] == "active" }, "still \((try? status(gid)) ?? [:])")
    }

    @Test(.timeLimit(.minutes(1)))
    func aStopIsPrompt() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-stop")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        #expect(try Self.answers(serve))
        usleep(300_000)
        // WHEN a service manager stops it
        let start = ContinuousClock.now
        let ending = try serve.stop(timeout: 20)
        let elapsed = ContinuousClock.now - start
        // THEN it exits at once, with 128 + SIGTERM (it took up to 4 s: idle workers and the lease keeper slept 2 s each)
        #expect(ending == .exited(143), "\(ending)")
        #expect(elapsed < .milliseconds(1500), "took \(elapsed)")
    }
}

/// Who hears notifications: every accepted WebSocket by default (aria2's way: aria2p's listener
/// opens one and never calls), only authenticated ones with `--notify-authenticated-only`.
@Suite("haul serve: who hears notifications")
struct CLIServeNotificationTests {
    /// Whether a silent WebSocket hears the `onDownloadStop` of a download added paused and removed.
    static func silentSocketHears(_ extra: [String]) throws -> Bool {
        let work = try TemporaryDirectory(prefix: "haul-serve-notify")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"), extra: extra)
        defer { _ = try? serve.stop() }
        let socket = try RawClient(port: serve.port)
        try socket.handshake(port: serve.port)
        let gid = try #require(try serve.result("aria2.addUri", [["http://127.0.0.1:9/n.bin"], ["pause": "true"]]) as? String)
        #expect(try serve.result("aria2.remove", [gid]) as? String == gid)
        guard let text = socket.text(timeout: 2) else { return false }
        return text.contains("aria2.onDownloadStop") && text.contains(gid)
    }

    @Test(.timeLimit(.minutes(1)))
    func everyAcceptedSocketHearsByDefaultAndOnlyAuthenticatedOnesWhenAsked() throws {
        #expect(try Self.silentSocketHears([]))
        #expect(try !Self.silentSocketHears(["--notify-authenticated-only"]))
    }
}
