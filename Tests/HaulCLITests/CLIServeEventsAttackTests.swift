import Foundation
import HaulTestSupport
import Testing

/// `GET /haul/events` against many clients at once and hostile `Last-Event-ID`s, and signed file
/// links used after their download went, on a real
/// `haul serve`, through raw sockets.
@Suite("haul serve: the event stream and the file link under attack", .serialized)
struct CLIServeEventsAttackTests {
    @Test(.timeLimit(.minutes(3)))
    func twoHundredStreamsAtOnceWithStaleHugeNegativeAndGarbageIdsAreAnsweredAndEachGetsTheNextCompletionOnce() throws {
        // GIVEN haul serve with one completion in its journal
        let work = try TemporaryDirectory(prefix: "haul-serve-events-attack")
        let nginx = try ServedFiles.start(in: work, [("small.bin", 40_000, 71)], limitRate: "1m")
        defer { nginx.stop() }
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { _ = try? serve.stop() }
        let first = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/small.bin"], ["out": "a.bin"]]) as? String)
        try CLIServeRoutesTests.waitFor(serve, first, status: "complete")
        // WHEN 200 clients open the stream at once, with no id, old ids, and ids that are negative,
        // not numbers, past 64 bits or 10,000 digits long
        let ids = ["", "0", "1", " 2 ", "-5", "abc", "99999999999999999999", "1e3", String(repeating: "9", count: 10_000), "0x10"]
        let clients = try (0..<200).map { index in
            let client = try RawClient(port: serve.port)
            let id = ids[index % ids.count]
            try client.send(
                "GET /haul/events?token=\(serve.secret) HTTP/1.1\r\nHost: 127.0.0.1:\(serve.port)\r\n" + (id.isEmpty ? "" : "Last-Event-ID: \(id)\r\n")
                    + "\r\n")
            return client
        }
        var texts = try clients.map { client in
            String(decoding: try client.read(timeout: 10) { RawClient.range(of: Array("\r\n\r\n".utf8), in: $0).map { $0 + 4 } }, as: UTF8.self)
        }
        // THEN each is answered as a stream
        #expect(texts.allSatisfy { $0.hasPrefix("HTTP/1.1 200") && $0.contains("text/event-stream") }, "\(texts.first { !$0.hasPrefix("HTTP/1.1 200") } ?? "")")
        // AND a call is still answered at once
        let start = ContinuousClock.now
        #expect(try serve.result("aria2.getVersion") is [String: Any])
        #expect(ContinuousClock.now - start < .seconds(2))
        // WHEN another download completes
        let second = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/small.bin"], ["out": "b.bin"]]) as? String)
        func completions(_ text: String) -> Int {
            text.split(separator: "\n").filter { $0.hasPrefix("data:") && $0.contains("aria2.onDownloadComplete") && $0.contains(second) }.count
        }
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline, texts.contains(where: { completions($0) == 0 }) {
            for (index, client) in clients.enumerated() {
                if let more = client.receive(timeout: 0.001), !more.isEmpty { texts[index] += String(decoding: more, as: UTF8.self) }
            }
        }
        usleep(500_000)
        for (index, client) in clients.enumerated() {
            if let more = client.receive(timeout: 0.01), !more.isEmpty { texts[index] += String(decoding: more, as: UTF8.self) }
        }
        // THEN every one of the 200 streams gets its completion exactly once
        let counts = texts.map(completions)
        #expect(counts.allSatisfy { $0 == 1 }, "completions per stream: \(Dictionary(grouping: counts, by: { $0 }).mapValues(\.count))")
        // AND the ids that are not this journal's got a resync, the old ones what they missed
        for (index, text) in texts.enumerated() {
            let id = ids[index % ids.count]
            let resynced = text.contains("event: haul.resync")
            if ["-5", "abc", "99999999999999999999", "1e3", "0x10"].contains(id) || id.count > 100 {
                #expect(resynced, "Last-Event-ID \(id.prefix(20)): no resync")
            } else {
                #expect(!resynced, "Last-Event-ID \(id.prefix(20)): resync")
            }
            if id == "0" { #expect(text.contains(first), "Last-Event-ID 0 did not get the first completion") }
        }
    }

    @Test(.timeLimit(.minutes(3)))
    func aSignedLinkHandedOutBeforeARemovalServesNothingAfterIt() throws {
        // GIVEN two complete downloads, each with a signed link handed out (valid a day)
        let work = try TemporaryDirectory(prefix: "haul-serve-link-reuse")
        let nginx = try ServedFiles.start(in: work, [("small.bin", 40_000, 72)], limitRate: "1m")
        defer { nginx.stop() }
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { _ = try? serve.stop() }
        var links: [String] = []
        var gids: [String] = []
        for name in ["a.bin", "b.bin"] {
            let gid = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/small.bin"], ["out": name]]) as? String)
            try CLIServeRoutesTests.waitFor(serve, gid, status: "complete")
            let link = try #require(try serve.result("haul.fileLink", [gid, 86_400]) as? [String: Any])
            links.append(serve.base + (try #require(link["path"] as? String)))
            gids.append(gid)
            #expect(try CLIServeRoutesTests.fetch(links.last ?? "").status == 200)
        }
        // WHEN one is removed with its files, and the other's result is cleared (its file stays on disk)
        _ = try serve.result("haul.removeWithFiles", [gids[0]])
        _ = try serve.result("aria2.removeDownloadResult", [gids[1]])
        // AND a new download takes the cleared one's name
        _ = try? FileManager.default.removeItem(atPath: work.file("dl/b.bin"))
        let next = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/small.bin"], ["out": "b.bin"]]) as? String)
        try CLIServeRoutesTests.waitFor(serve, next, status: "complete")
        // THEN neither old link serves a byte: their downloads are gone (404), whatever is at their names now
        for link in links {
            let answer = try CLIServeRoutesTests.fetch(link)
            #expect(answer.status == 404, "\(link): \(answer.status) \(String(decoding: answer.body.prefix(200), as: UTF8.self))")
        }
    }

    @Test(.timeLimit(.minutes(3)))
    func aFileMovedWhileItIsSentIsCutAndResumesExactWithIfRange() throws {
        // GIVEN a complete 32 MiB download being fetched slowly (2 MB/s) from the file route
        let work = try TemporaryDirectory(prefix: "haul-serve-move-while-sent")
        let nginx = try ServedFiles.start(in: work, [("big.bin", 32 << 20, 73)], limitRate: "1m")
        defer { nginx.stop() }
        let original = try Data(contentsOf: URL(fileURLWithPath: work.file("www/big.bin")))
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { _ = try? serve.stop() }
        let gid = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/big.bin"], ["out": "a.bin"]]) as? String)
        try CLIServeRoutesTests.waitFor(serve, gid, status: "complete")
        let url = serve.base + "/haul/file/" + gid
        let fetch = Process()
        fetch.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        fetch.arguments = [
            "-s", "--limit-rate", "2m", "--max-time", "60", "-D", work.file("head.txt"), "-o", work.file("part.bin"), "-H",
            "Authorization: Bearer \(serve.secret)", url,
        ]
        try fetch.run()
        usleep(1_500_000)
        // WHEN it is moved meanwhile (a rename: its bytes stay as they are)
        _ = try serve.result("haul.move", [gid, ["dir": "moved"]])
        fetch.waitUntilExit()
        // THEN the answer was cut short, with the original's first bytes only
        let part = try Data(contentsOf: URL(fileURLWithPath: work.file("part.bin")))
        #expect(fetch.terminationStatus == 18 && part.count < original.count, "curl exit \(fetch.terminationStatus), \(part.count) bytes")
        #expect(part == original.prefix(part.count))
        // AND the rest, asked for with Range and If-Range (the ETag the cut answer had), comes as a
        // 206 at its new place, and the two together are the file, exact
        let head = try String(contentsOfFile: work.file("head.txt"), encoding: .utf8)
        let etag = try #require(
            head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("etag:") }.map { String($0.dropFirst(5)).trimmingCharacters(in: .whitespaces) })
        let rest = try CLIServeRoutesTests.fetch(
            url, ["-H", "Authorization: Bearer \(serve.secret)", "-H", "Range: bytes=\(part.count)-", "-H", "If-Range: \(etag)"])
        #expect(rest.status == 206 && rest.headers["etag"] == etag, "\(rest.status) \(rest.headers)")
        #expect(part + rest.body == original)
    }

    @Test(.timeLimit(.minutes(3)))
    func twoTabsDeletingAndMovingOneDownloadAtOnceAreTakenOneAfterTheOtherAndNeverBlameADownload() throws {
        // GIVEN complete downloads, each then asked at once (two tabs, double clicks) to be removed
        // with its files twice, or removed with its files and moved
        let work = try TemporaryDirectory(prefix: "haul-serve-two-tabs")
        let nginx = try ServedFiles.start(in: work, [("small.bin", 200_000, 74)], limitRate: "1m")
        defer { nginx.stop() }
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { _ = try? serve.stop() }
        for round in 0..<8 {
            let gid = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/small.bin"], ["out": "r\(round).bin"]]) as? String)
            try CLIServeRoutesTests.waitFor(serve, gid, status: "complete")
            let removesTwice = round % 2 == 0
            let second: (String, [Any]) = removesTwice ? ("haul.removeWithFiles", [gid]) : ("haul.move", [gid, ["dir": "m\(round)"]])
            // WHEN both calls come at once
            let replies = try CLIServeFilesAttackTests.atOnce(serve, [("haul.removeWithFiles", [gid]), second])
            let errors = replies.compactMap { ($0["error"] as? [String: Any])?["message"] as? String }
            // THEN the removal deleted the file (after the move, if the move went first: from its
            // new place); the other call, when it came second, found no download: no file of it is
            // left anywhere, and the download is gone
            let deleted = replies.compactMap { ($0["result"] as? [String: Any])?["deleted"] as? [[String: Any]] }.flatMap { $0 }
            #expect(deleted.filter { ($0["role"] as? String) == "file" }.count == 1, "round \(round): \(replies)")
            let left = CLIServeFilesAttackTests.files(in: work.file("dl"))
            #expect(left.isEmpty, "round \(round): left \(left); replies \(replies)")
            #expect(try serve.call("aria2.tellStatus", [gid])["error"] != nil, "round \(round): the download is still listed")
            // AND no answer says a download (or a process: haul serve itself) holds the destination
            // when only the other call did
            #expect(!errors.contains { $0.contains("already downloading") }, "round \(round): \(errors)")
        }
    }
}
