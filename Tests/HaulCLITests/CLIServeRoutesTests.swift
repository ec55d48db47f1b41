import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `haul serve`'s file route and event stream, driven with curl as a client would, against real
/// downloads.
@Suite("haul serve: the file route and the event stream", .serialized)
struct CLIServeRoutesTests {
    /// Waits until download `gid` has `status` (30 s at most).
    static func waitFor(_ serve: ServeProcess, _ gid: String, status: String, timeout: Double = 30) throws {
        let deadline = Date().addingTimeInterval(timeout)
        var last = ""
        while Date() < deadline {
            let result = try serve.result("aria2.tellStatus", [gid, ["status"]]) as? [String: Any]
            last = result?["status"] as? String ?? ""
            if last == status { return }
            usleep(50_000)
        }
        throw TestSupportError("download \(gid) is \(last), not \(status), after \(timeout) s")
    }

    /// A GET (or `arguments`) of `url` by curl: status, header fields (names lowercased), body.
    static func fetch(_ url: String, _ arguments: [String] = []) throws -> (status: Int, headers: [String: String], body: Data) {
        let scratch = try TemporaryDirectory(prefix: "haul-fetch")
        let result = try Curl.run(["-s", "-D", scratch.file("head"), "-o", scratch.file("body")] + arguments + [url])
        guard result.status == 0 else { throw TestSupportError("curl \(url) failed: \(result.stderr)") }
        let head = try String(contentsOfFile: scratch.file("head"), encoding: .utf8)
        var lines = head.components(separatedBy: "\r\n")
        let status = Int(lines.removeFirst().split(separator: " ")[1]) ?? 0
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let body = (try? Data(contentsOf: URL(fileURLWithPath: scratch.file("body")))) ?? Data()
        return (status, headers, body)
    }

    @Test(.timeLimit(.minutes(2)))
    func theFileRouteServesExactlyTheFinishedFileAndRefusesEverythingElse() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-file-route")
        let nginx = try ServedFiles.start(in: work, [("a.bin", 3_000_000, 1), ("big.bin", 8 << 20, 2), ("out.bin", 4096, 3)], limitRate: "64k")
        defer { nginx.stop() }
        let original = try Data(contentsOf: URL(fileURLWithPath: work.file("www/a.bin")))
        // GIVEN a download finished outside the download root by `haul queue` on the same store
        try FileManager.default.createDirectory(atPath: work.file("elsewhere"), withIntermediateDirectories: true)
        let added = try HaulBinary.run(["queue", "add", "--state", work.file("state"), "-o", work.file("elsewhere/out.bin"), nginx.baseURL + "/out.bin"])
        #expect(added.status == 0, "\(added.stderr)")
        let ran = try HaulBinary.run(["queue", "run", "--state", work.file("state")])
        #expect(ran.status == 0, "\(ran.stderr)")
        let outside = "0000000000000001"
        // AND haul serve with a secret, a finished download and one still running
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { CLIServeAttackTests.kill(serve) }
        let gid = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/a.bin"]]) as? String)
        let running = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/limited/big.bin"]]) as? String)
        try Self.waitFor(serve, gid, status: "complete")
        let url = serve.base + "/haul/file/" + gid
        let bearer = ["-H", "Authorization: Bearer \(serve.secret)"]

        // WHEN it is fetched with the token THEN the bytes are the file's, named and validated
        let whole = try Self.fetch(url, bearer)
        #expect(whole.status == 200 && whole.body == original)
        #expect(whole.headers["content-length"] == "3000000" && whole.headers["accept-ranges"] == "bytes")
        #expect(whole.headers["content-disposition"] == #"attachment; filename="a.bin"; filename*=UTF-8''a.bin"#)
        let etag = try #require(whole.headers["etag"])
        #expect(etag.hasPrefix("\"") && !etag.hasPrefix("W/"))
        #expect(try Self.fetch(url, ["-H", "X-Haul-Token: \(serve.secret)"]).body == original)
        // AND ranges give exactly their bytes, with Content-Range; past the end is 416
        let part = try Self.fetch(url, bearer + ["-H", "Range: bytes=1000-1999"])
        #expect(part.status == 206 && part.body == original[1000..<2000] && part.headers["content-range"] == "bytes 1000-1999/3000000")
        let tail = try Self.fetch(url, bearer + ["-H", "Range: bytes=-10"])
        #expect(tail.status == 206 && tail.body == original.suffix(10))
        let past = try Self.fetch(url, bearer + ["-H", "Range: bytes=3000000-"])
        #expect(past.status == 416 && past.headers["content-range"] == "bytes */3000000")
        // AND the validators work: If-None-Match gives 304, a stale If-Range the whole file
        #expect(try Self.fetch(url, bearer + ["-H", "If-None-Match: \(etag)"]).status == 304)
        let stale = try Self.fetch(url, bearer + ["-H", "Range: bytes=0-9", "-H", "If-Range: \"old\""])
        #expect(stale.status == 200 && stale.body == original)
        let current = try Self.fetch(url, bearer + ["-H", "Range: bytes=0-9", "-H", "If-Range: \(etag)"])
        #expect(current.status == 206 && current.body == original.prefix(10))
        // AND HEAD gives the head only
        let head = try Self.fetch(url, bearer + ["-I"])
        // (curl -I writes the head where the body would go: no byte of the file follows it)
        #expect(head.status == 200 && head.headers["content-length"] == "3000000" && head.body.count < 1000)

        // WHEN the token is missing or wrong THEN 401, and not a byte of the file
        for arguments in [[], ["-H", "Authorization: Bearer wrong"], ["-H", "X-Haul-Token: wrong"], ["-H", "Authorization: Basic x"]] {
            let refused = try Self.fetch(url, arguments)
            #expect(refused.status == 401 && refused.body != original && refused.headers["www-authenticate"] == "Bearer")
        }
        // WHEN a browser follows a signed link THEN it gets the file without the token
        let link = try #require(try serve.result("haul.fileLink", [gid]) as? [String: Any])
        let path = try #require(link["path"] as? String)
        #expect(try Self.fetch(serve.base + path).body == original)
        // AND a changed signature or GID, or an expired link, is refused
        #expect(try Self.fetch(serve.base + path.replacingOccurrences(of: "signature=", with: "signature=0")).status == 403)
        #expect(try Self.fetch(serve.base + path.replacingOccurrences(of: gid, with: running)).status == 403)
        let short = try #require(try serve.result("haul.fileLink", [gid, 1]) as? [String: Any])
        usleep(2_100_000)
        let expired = try Self.fetch(serve.base + (short["path"] as? String ?? ""))
        #expect(expired.status == 403 && String(decoding: expired.body, as: UTF8.self).contains("expired"))

        // WHEN the GID is not complete, unknown, or its file is outside the root THEN it is refused
        let notComplete = try Self.fetch(serve.base + "/haul/file/" + running, bearer)
        #expect(notComplete.status == 409 && String(decoding: notComplete.body, as: UTF8.self).contains("not complete"))
        #expect(try Self.fetch(serve.base + "/haul/file/00000000000000ff", bearer).status == 404)
        #expect(try Self.fetch(serve.base + "/haul/file/not-a-gid", bearer).status == 400)
        let outsideAnswer = try Self.fetch(serve.base + "/haul/file/" + outside, bearer)
        #expect(outsideAnswer.status == 403 && String(decoding: outsideAnswer.body, as: UTF8.self).contains("outside the download directory"))
        #expect(try serve.call("haul.fileLink", [running])["error"] != nil)

        // WHEN another file is put in place under the same name (same bytes, another inode)
        let finalPath = work.file("dl/a.bin")
        try original.write(to: URL(fileURLWithPath: work.file("dl/swap.tmp")))
        #expect(rename(work.file("dl/swap.tmp"), finalPath) == 0)
        // THEN it is not served: it is not the file haul finished
        let swapped = try Self.fetch(url, bearer)
        #expect(swapped.status == 409 && swapped.body != original)
        #expect(String(decoding: swapped.body, as: UTF8.self).contains("not the one haul finished"))
    }

    @Test(.timeLimit(.minutes(3)))
    func twelveSlowDownloadsOfA1GiBFileLeaveTheWorkersFreeForCalls() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-file-slow")
        // GIVEN a finished 1 GiB download (sparse at its source), and haul serve's eight workers
        try FileManager.default.createDirectory(atPath: work.file("www"), withIntermediateDirectories: true)
        let source = open(work.file("www/big.bin"), O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        #expect(source >= 0 && ftruncate(source, 1 << 30) == 0)
        close(source)
        let nginx = try NginxServer(documentRoot: work.file("www"))
        defer { nginx.stop() }
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { CLIServeAttackTests.kill(serve) }
        let gid = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/big.bin"]]) as? String)
        try Self.waitFor(serve, gid, status: "complete", timeout: 120)
        // WHEN twelve clients fetch it at 256 KB/s each (more clients than workers; over an hour each)
        let downloads = try (0..<12).map { _ in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            process.arguments = [
                "-s", "-o", "/dev/null", "--limit-rate", "256k", "--max-time", "60", "-H", "Authorization: Bearer \(serve.secret)",
                serve.base + "/haul/file/" + gid,
            ]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            return process
        }
        defer {
            for download in downloads where download.isRunning {
                kill(download.processIdentifier, SIGKILL)
                download.waitUntilExit()
            }
        }
        usleep(1_500_000)
        let started = downloads.filter { $0.isRunning }.count
        #expect(started == 12)
        // THEN calls are still answered at once, one after another (five, the median within a second)
        let (answered, _, median) = try CLIServeLimitsTests.answers(serve, tries: 5)
        #expect(answered && median < .seconds(1), "answered: \(answered), the median after \(median)")
        // AND the server holds about one chunk per client, not the file
        let memory = try CLIServeLimitsTests.memory(serve.running.pid)
        #expect(memory.peak < 400, "peak resident set \(memory.peak) MiB")
        let stillRunning = downloads.filter { $0.isRunning }.count
        #expect(stillRunning == 12)
    }

    @Test(.timeLimit(.minutes(1)))
    func withoutASecretTheFileRouteSaysWhyItIsClosed() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-file-nosecret")
        // GIVEN haul serve without --secret
        let running = try RunningHaul(["serve", "--listen", "127.0.0.1:0", "--state", work.file("state"), "-d", work.file("dl")])
        defer {
            running.send(SIGKILL)
            _ = try? running.wait(timeout: 10)
        }
        var port: Int?
        let deadline = Date().addingTimeInterval(20)
        while port == nil, Date() < deadline {
            if let range = running.stderr.range(of: #"127\.0\.0\.1:[0-9]+"#, options: .regularExpression) {
                port = Int(running.stderr[range].split(separator: ":")[1])
            } else {
                usleep(20_000)
            }
        }
        let base = "http://127.0.0.1:\(try #require(port))"
        // WHEN a file is asked for THEN 403, saying --secret is needed
        let answer = try Self.fetch(base + "/haul/file/0000000000000001")
        #expect(answer.status == 403 && String(decoding: answer.body, as: UTF8.self).contains("--secret"))
        // AND haul.fileLink says the same
        let reply = try Curl.run([
            "-s", "--data-binary", #"{"jsonrpc":"2.0","id":1,"method":"haul.fileLink","params":["0000000000000001"]}"#, base + "/jsonrpc",
        ])
        #expect(reply.stdoutString.contains("--secret"))
    }

    /// An event stream read by curl into a file, until `stop()`.
    final class EventReader {
        let process = Process()
        let path: String

        init(_ url: String, lastEventID: Int64?, into path: String) throws {
            self.path = path
            _ = FileManager.default.createFile(atPath: path, contents: nil)
            process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            process.arguments = ["-s", "-N", "--max-time", "120", "-o", path] + (lastEventID.map { ["-H", "Last-Event-ID: \($0)"] } ?? []) + [url]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
        }

        /// The events received so far: (id, event, gid).
        var events: [(id: Int64, name: String, gid: String)] {
            let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            return text.components(separatedBy: "\n\n").compactMap { block in
                var id: Int64?
                var name = "message"
                var gid = ""
                for line in block.split(separator: "\n") {
                    if line.hasPrefix("id: ") { id = Int64(line.dropFirst(4)) }
                    if line.hasPrefix("event: ") { name = String(line.dropFirst(7)) }
                    if line.hasPrefix("data: "), let range = line.range(of: #""gid":"[0-9a-f]{16}""#, options: .regularExpression) {
                        gid = String(line[range].dropFirst(7).dropLast())
                    }
                }
                return id.map { ($0, name, gid) }
            }
        }

        func stop() {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }

    @Test(.timeLimit(.minutes(3)))
    func afterKill9AndARestartEachOf200CompletionsReachesAReconnectingClientExactlyOnce() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-events-kill")
        let files = (0..<200).map { (name: "f\($0).bin", size: 6000 + $0, seed: UInt64($0 + 1)) }
        let nginx = try ServedFiles.start(in: work, files, limitRate: "24k")
        defer { nginx.stop() }
        try Self.killAndResume(
            state: work.file("state"), directory: work.file("dl"), urls: files.map { nginx.baseURL + "/limited/" + $0.name }, scratch: work)
    }

    @Test(.timeLimit(.minutes(3)))
    func onPostgreSQLAfterKill9AndARestartEachOf200CompletionsReachesAReconnectingClientExactlyOnce() throws {
        let fleet = try FleetFixture(limitRate: "24k")
        defer { fleet.stop() }
        let names = try fleet.makeFiles(200, size: 6000...6200)
        let work = try TemporaryDirectory(prefix: "haul-serve-events-kill-pg")
        try Self.killAndResume(state: fleet.uri("serve"), directory: fleet.output, urls: names.map { fleet.nginx.baseURL + "/limited/" + $0 }, scratch: work)
    }

    /// A client follows the events while `urls` are added in one call; the server is killed with
    /// SIGKILL after 40 completions, started again on `state`, and the client reconnects with its
    /// last id: each completion must reach it exactly once over the two connections.
    static func killAndResume(state: String, directory: String, urls: [String], scratch work: TemporaryDirectory) throws {
        // GIVEN haul serve, and a client of its event stream
        let first = try ServeProcess(state: state, directory: directory, extra: ["-j", "16"])
        defer { CLIServeAttackTests.kill(first) }
        let before = try EventReader(first.base + "/haul/events?token=" + first.secret, lastEventID: nil, into: work.file("events-1"))
        defer { before.stop() }
        usleep(300_000)
        // WHEN the downloads are added (20 to a call: a message's calls get a second) and
        // started, and the server is killed with SIGKILL mid-run
        var gids = Set<String>()
        for batch in stride(from: 0, to: urls.count, by: 20) {
            let calls = urls[batch..<min(batch + 20, urls.count)].map {
                ["methodName": "aria2.addUri", "params": ["token:" + first.secret, [$0], ["pause": "true"]]] as [String: Any]
            }
            let request: [String: Any] = ["jsonrpc": "2.0", "id": 1, "method": "system.multicall", "params": [calls]]
            let body = String(decoding: try JSONSerialization.data(withJSONObject: request), as: UTF8.self)
            let reply = try Curl.run(["-s", "--data-binary", body, first.base + "/jsonrpc"])
            let object = try JSONSerialization.jsonObject(with: Data(reply.stdout)) as? [String: Any]
            let added = try #require(object?["result"] as? [[Any]])
            gids.formUnion(added.compactMap { $0.first as? String })
        }
        // (added paused, then started together: the kill lands mid-run however long adding took)
        _ = try first.result("aria2.unpauseAll")
        #expect(gids.count == urls.count)
        let killAt = Date().addingTimeInterval(60)
        while before.events.filter({ $0.name == "aria2.onDownloadComplete" }).count < 40, Date() < killAt { usleep(20_000) }
        first.running.send(SIGKILL)
        _ = try first.running.wait(timeout: 10)
        usleep(200_000)
        before.stop()
        let seenBefore = before.events
        let lastID = try #require(seenBefore.map(\.id).max())
        let completedBefore = seenBefore.filter { $0.name == "aria2.onDownloadComplete" }.count
        #expect(completedBefore >= 40 && completedBefore < urls.count, "the kill landed after \(completedBefore) completions")

        // AND it starts again on the same store, and the client reconnects with its last id
        let second = try ServeProcess(state: state, directory: directory, extra: ["-j", "16"])
        defer { CLIServeAttackTests.kill(second) }
        let after = try EventReader(second.base + "/haul/events?token=" + second.secret, lastEventID: lastID, into: work.file("events-2"))
        defer { after.stop() }
        let deadline = Date().addingTimeInterval(120)
        func completions() -> [String] {
            (seenBefore + after.events).filter { $0.name == "aria2.onDownloadComplete" }.map(\.gid)
        }
        while Set(completions()).count < urls.count, Date() < deadline { usleep(100_000) }
        usleep(1_000_000)
        after.stop()

        // THEN every download's completion arrived exactly once over the two connections
        let all = completions()
        #expect(Set(all) == gids)
        #expect(all.count == urls.count, "\(all.count) completion events for \(urls.count) downloads")
        // AND the ids the client saw increase, across the restart, with no resync needed
        let ids = (seenBefore + after.events).filter { $0.name != "haul.progress" }.map(\.id)
        #expect(ids == ids.sorted() && Set(ids).count == ids.count)
        #expect(!after.events.contains { $0.name == "haul.resync" })
        // AND every file is complete
        let status = try second.result("aria2.tellStopped", [0, 1000, ["status"]]) as? [[String: Any]]
        #expect(status?.filter { $0["status"] as? String == "complete" }.count == urls.count)
    }

    @Test(.timeLimit(.minutes(2)))
    func completionsNoServerJournaledReachAReconnectingClientOnceWhenTheServerStartsAgain() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-events-missed")
        let files = (0..<6).map { (name: "m\($0).bin", size: 3000 + $0, seed: UInt64($0 + 11)) }
        let nginx = try ServedFiles.start(in: work, files, limitRate: "1m")
        defer { nginx.stop() }
        // GIVEN a client that saw one download complete, and the server stopped
        let first = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { CLIServeAttackTests.kill(first) }
        let before = try EventReader(first.base + "/haul/events?token=" + first.secret, lastEventID: nil, into: work.file("events-1"))
        defer { before.stop() }
        usleep(300_000)
        let gid = try #require(try first.result("aria2.addUri", [[nginx.baseURL + "/" + files[0].name]]) as? String)
        try Self.waitFor(first, gid, status: "complete")
        usleep(300_000)
        #expect(try first.stop() == .exited(143))
        before.stop()
        let lastID = try #require(before.events.map(\.id).max())
        // WHEN five more complete while no server runs (haul queue run on the same store)
        for file in files.dropFirst() {
            let added = try HaulBinary.run(["queue", "add", "--state", work.file("state"), "-d", work.file("dl"), nginx.baseURL + "/" + file.name])
            #expect(added.status == 0, "\(added.stderr)")
        }
        let ran = try HaulBinary.run(["queue", "run", "--state", work.file("state")])
        #expect(ran.status == 0, "\(ran.stderr)")
        // AND the server starts again, and the client reconnects with its last id
        let second = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { CLIServeAttackTests.kill(second) }
        let after = try EventReader(second.base + "/haul/events?token=" + second.secret, lastEventID: lastID, into: work.file("events-2"))
        defer { after.stop() }
        let deadline = Date().addingTimeInterval(20)
        while after.events.filter({ $0.name == "aria2.onDownloadComplete" }).count < 5, Date() < deadline { usleep(50_000) }
        usleep(500_000)
        after.stop()
        // THEN it gets the five completions it missed, once each, and not the one it saw
        let completed = after.events.filter { $0.name == "aria2.onDownloadComplete" }.map(\.gid)
        #expect(completed.count == 5 && Set(completed).count == 5 && !completed.contains(gid))
        // AND a client that reconnects from the start of the journal gets six, once each
        let again = try EventReader(second.base + "/haul/events?token=" + second.secret, lastEventID: 0, into: work.file("events-3"))
        usleep(1_000_000)
        again.stop()
        let all = again.events.filter { $0.name == "aria2.onDownloadComplete" }.map(\.gid)
        #expect(all.count == 6 && Set(all).count == 6)
    }

    @Test(.timeLimit(.minutes(1)))
    func aRunningDownloadsFiguresComeAtMostTwiceASecond() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-events-progress")
        let nginx = try ServedFiles.start(in: work, [("big.bin", 8 << 20, 5)], limitRate: "256k")
        defer { nginx.stop() }
        // GIVEN a client of the event stream, and a download that runs for half a minute
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { CLIServeAttackTests.kill(serve) }
        let reader = try EventReader(serve.base + "/haul/events?token=" + serve.secret, lastEventID: nil, into: work.file("events"))
        defer { reader.stop() }
        usleep(300_000)
        let gid = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/limited/big.bin"]]) as? String)
        // WHEN it is followed for four seconds
        usleep(4_000_000)
        reader.stop()
        // THEN it got the start, then its figures, growing, at most twice a second (and at least once a second)
        let events = reader.events
        #expect(events.first?.name == "aria2.onDownloadStart" && events.first?.gid == gid)
        let figures = events.filter { $0.name == "haul.progress" && $0.gid == gid }
        #expect(figures.count >= 4 && figures.count <= 9, "\(figures.count) progress events in 4 s")
        #expect(figures.allSatisfy { $0.id == events.first?.id })
        let text = try String(contentsOfFile: work.file("events"), encoding: .utf8)
        let lengths = text.split(separator: "\n").compactMap { line -> Int? in
            guard line.contains("haul.progress") || line.contains("completedLength"),
                let range = line.range(of: #""completedLength":"[0-9]+""#, options: .regularExpression)
            else { return nil }
            return Int(line[range].dropFirst(19).dropLast())
        }
        #expect(lengths == lengths.sorted() && (lengths.last ?? 0) > 0)
    }

    @Test(.timeLimit(.minutes(1)))
    func theEventStreamKeepsTheTokenAndOriginRules() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-events-rules")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"), extra: ["--allow-origin", "http://ui.example"])
        defer { CLIServeAttackTests.kill(serve) }
        let url = serve.base + "/haul/events"
        // WHEN the token is missing or wrong THEN 401
        #expect(try Curl.status(url, ["--max-time", "2"]).status == 401)
        #expect(try Curl.status(url + "?token=wrong", ["--max-time", "2"]).status == 401)
        // AND a foreign origin or a rebinding Host is refused as at /jsonrpc
        #expect(try Curl.status(url + "?token=" + serve.secret, ["--max-time", "2", "-H", "Origin: http://evil.example"]).status == 403)
        #expect(try Curl.status(url + "?token=" + serve.secret, ["--max-time", "2", "-H", "Host: evil.example"]).status == 403)
        // WHEN the token is sent THEN the stream opens as text/event-stream
        let open = try Curl.run(["-s", "-N", "-D", "-", "--max-time", "1", "-H", "Authorization: Bearer \(serve.secret)", url])
        #expect(open.stdoutString.hasPrefix("HTTP/1.1 200") && open.stdoutString.contains("Content-Type: text/event-stream"))
        #expect(open.stdoutString.contains("retry: 2000"))
        #expect(!open.stdoutString.contains("Access-Control-Allow-Origin"))
        // AND a page of an allowed origin may read it (its EventSource is a CORS request)
        let allowed = try Curl.run(["-s", "-N", "-D", "-", "--max-time", "1", "-H", "Origin: http://ui.example", url + "?token=" + serve.secret])
        #expect(allowed.stdoutString.hasPrefix("HTTP/1.1 200") && allowed.stdoutString.contains("Access-Control-Allow-Origin: http://ui.example"))
    }
}
