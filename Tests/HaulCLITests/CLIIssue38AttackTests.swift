import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A hostile round on issue 38's surfaces: the finished file marked once after its rename, the
/// claims ahead of a queue run, the process-wide figures ticker.
@Suite("issue 38 attack: mark once, claims ahead, figures ticker", .serialized)
struct CLIIssue38AttackTests {
    @Test(
        """
        GIVEN a download killed right after its rename, before its finished mark, then run again ("already complete") \
        WHEN it is run a third time THEN it is still already complete: exit 0, nothing fetched, the file bit-exact
        """,
        .timeLimit(.minutes(1)))
    func aFileFoundByItsRecordAfterACrashBeforeItsMarkStaysCompleteRunAfterRun() throws {
        let server = try FaultServer()
        let body = TestData.bytes(count: 200_000, seed: 3_801)
        server.setResource("/f.bin", body: body)
        let directory = try TemporaryDirectory(prefix: "haul-cli-a38")
        let output = directory.file("f.bin")
        let arguments = ["-q", "--retry", "0", "-o", output, server.url("/f.bin")]
        let crashed = try HaulBinary.run(arguments, environment: ["HAUL_TEST_CRASH_AT": "after-rename"])
        try #require(crashed.status == 128 + SIGKILL, "the crash point was not reached: \(crashed.stderr)")

        let second = try HaulBinary.run(["--retry", "0", "-o", output, server.url("/f.bin")])
        #expect(second.status == 0, "second run: \(second.stderr)")
        #expect(second.stderr.contains("already complete"), "second run: \(second.stderr)")
        let requestsBefore = server.requests.count

        let third = try HaulBinary.run(["--retry", "0", "-o", output, server.url("/f.bin")])

        #expect(third.status == 0, "third run: \(third.stderr)")
        #expect(third.stderr.contains("already complete"), "third run: \(third.stderr)")
        #expect(server.requests.count == requestsBefore, "the third run fetched again")
        #expect(Disk.difference(output, body) == nil)
        #expect(!Disk.exists(output + ".haul-resume"))
    }

    @Test(
        """
        GIVEN a download killed right after its rename, before its finished mark, an hour ago (its record's time moved back) \
        WHEN the file is changed in place with its size and modification time put back (rsync --inplace -t) and it is run again \
        THEN it is not taken for complete: refused as a file in the way (exit 7), the user's bytes untouched, nothing fetched
        """,
        .timeLimit(.minutes(1)))
    func aFileChangedInPlaceAfterACrashBeforeItsMarkIsNotTakenForComplete() throws {
        let server = try FaultServer()
        let body = TestData.bytes(count: 200_000, seed: 3_802)
        server.setResource("/f.bin", body: body)
        let directory = try TemporaryDirectory(prefix: "haul-cli-a38")
        let output = directory.file("f.bin")
        let crashed = try HaulBinary.run(["-q", "--retry", "0", "-o", output, server.url("/f.bin")], environment: ["HAUL_TEST_CRASH_AT": "after-rename"])
        try #require(crashed.status == 128 + SIGKILL, "the crash point was not reached: \(crashed.stderr)")
        // The crash was an hour ago.
        let recordPath = output + ".haul-resume"
        let saved = try #require(Disk.bytes(recordPath))
        var record = try #require(try JSONSerialization.jsonObject(with: Data(saved)) as? [String: Any])
        let savedAt = try #require(record["updatedAt"] as? Double)
        record["updatedAt"] = savedAt - 3_600
        try Disk.write(Array(try JSONSerialization.data(withJSONObject: record)), to: recordPath)
        // Bytes changed in place, the size and the modification time put back.
        var before = stat()
        try #require(lstat(output, &before) == 0)
        var edited = body
        for index in 1_000..<1_010 { edited[index] ^= 0x5A }
        let fd = open(output, O_WRONLY)
        try #require(fd >= 0)
        _ = edited[1_000..<1_010].withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 1_000) }
        var times = [before.st_atim, before.st_mtim]
        #expect(futimens(fd, &times) == 0)
        close(fd)
        let requestsBefore = server.requests.count

        let again = try HaulBinary.run(["--retry", "0", "-o", output, server.url("/f.bin")])

        #expect(again.status == 7, "run again: \(again.status) \(again.stderr)")
        #expect(!again.stderr.contains("already complete"), "run again: \(again.stderr)")
        #expect(Disk.difference(output, edited) == nil)
        #expect(server.requests.count == requestsBefore)
    }

    @Test(
        """
        GIVEN a complete download WHEN another program appends to it, or touches it, and it is run again \
        THEN it is refused (exit 7) with the reason: the file is no longer the one Haul finished for this URL; \
        the user's bytes stay as they are and nothing is fetched
        """,
        .timeLimit(.minutes(1)), arguments: ["append", "touch"])
    func aFinishedFileChangedSinceIsRefusedSayingWhy(change: String) throws {
        let server = try FaultServer()
        let body = TestData.bytes(count: 50_000, seed: 3_803)
        server.setResource("/f.bin", body: body)
        let directory = try TemporaryDirectory(prefix: "haul-cli-a38")
        let output = directory.file("f.bin")
        let first = try HaulBinary.run(["-q", "--retry", "0", "-o", output, server.url("/f.bin")])
        try #require(first.status == 0, "first run: \(first.stderr)")
        var expected = body
        if change == "append" {
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data([1, 2, 3]))
            try handle.close()
            expected += [1, 2, 3]
        } else {
            var times = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000_000, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, output, &times, 0) == 0)
        }
        let requestsBefore = server.requests.count

        let again = try HaulBinary.run(["--retry", "0", "-o", output, server.url("/f.bin")])

        #expect(again.status == 7, "run again: \(again.stderr)")
        #expect(again.stderr.contains("is no longer the file Haul finished for this URL"), "run again: \(again.stderr)")
        #expect(again.stderr.contains("--force"), "run again: \(again.stderr)")
        #expect(Disk.difference(output, expected) == nil)
        #expect(server.requests.count == requestsBefore)
    }

    // MARK: claims ahead

    /// A store of `count` items at `/NAMEi.bin` (20 KB each), the first `slow` ones throttled.
    private static func queued(_ prefix: String, count: Int, slow: Int = 1, seed: UInt64) throws -> (
        server: FaultServer, store: StoreFixture, out: TemporaryDirectory, ids: [Int64], bodies: [[UInt8]]
    ) {
        let server = try FaultServer()
        let bodies = (0..<count).map { TestData.bytes(count: $0 < slow ? 300_000 : 20_000, seed: seed + UInt64($0)) }
        for (index, body) in bodies.enumerated() {
            server.setResource("/\(prefix)\(index).bin", body: body)
            if index < slow { server.setPersistentFaults("/\(prefix)\(index).bin", [.throttle(bytesPerSecond: 100_000)]) }
        }
        let store = try StoreFixture()
        let out = try TemporaryDirectory(prefix: "haul-cli-a38")
        let added = try store.haul(["add"] + (0..<count).map { server.url("/\(prefix)\($0).bin") } + ["-d", out.path])
        let ids = StoreFixture.ids(added)
        try #require(ids.count == count, "add: \(added.stderr)")
        return (server, store, out, ids, bodies)
    }

    @Test(
        """
        GIVEN a run of one job that claimed four items ahead, the first downloading slowly \
        WHEN it is interrupted (SIGINT) THEN it exits 130 and every item it held is queued again, none left running; \
        the next run completes each one bit-exact
        """,
        .timeLimit(.minutes(1)))
    func anInterruptHandsBackTheItemsHeldAhead() throws {
        let (server, store, out, ids, bodies) = try Self.queued("i", count: 4, seed: 3_810)
        let run = try RunningHaul(["queue", "run", "-q", "-j", "1", "--claim-batch", "4", "--retry", "0", "--state", store.path])
        #expect(try eventually(10) { try store.items().values.allSatisfy { $0["state"] as? String == "running" } }, "\(run.stderr)")
        #expect(Disk.waitUntil(timeout: 10) { server.bodyBytesSent("/i0.bin") > 50_000 })

        run.send(SIGINT)

        #expect(try run.wait(timeout: 15) == .exited(130), "run: \(run.stderr)")
        let items = try store.items()
        for id in ids { #expect(items.state(id) == "queued", "item \(id): \(items.values)") }
        let asked = server.requests.map(\.path)
        #expect(asked == ["/i0.bin"], "requests: \(asked)")
        let next = try store.haul(["run", "-q", "-j", "1", "--retry", "0"])
        #expect(next.status == 0, "next: \(next.stderr)")
        for (index, body) in bodies.enumerated() { #expect(Disk.difference(out.file("i\(index).bin"), body) == nil) }
    }

    @Test(
        """
        GIVEN a run of one job that claimed five items ahead with a lease of 2 s, killed (SIGKILL) while the first downloads \
        WHEN a second run starts at once THEN it completes every item bit-exact, each exactly once, none fetched twice whole, \
        within the lease plus the downloads
        """,
        .timeLimit(.minutes(1)))
    func aRunKilledWhileHoldingItemsAheadLosesNoneAndDuplicatesNone() throws {
        let (server, store, out, ids, bodies) = try Self.queued("k", count: 5, seed: 3_820)
        var environment = ProcessInfo.processInfo.environment
        environment["HAUL_LEASE_SECONDS"] = "2"
        let run = try RunningHaul(
            ["queue", "run", "-q", "-j", "1", "--claim-batch", "5", "--retry", "0", "--state", store.path], environment: environment)
        #expect(try eventually(10) { try store.items().values.allSatisfy { $0["state"] as? String == "running" } }, "\(run.stderr)")
        #expect(Disk.waitUntil(timeout: 10) { server.bodyBytesSent("/k0.bin") > 50_000 })
        run.send(SIGKILL)
        _ = try run.wait(timeout: 10)
        server.setPersistentFaults("/k0.bin", [])

        let started = Date()
        let next = try HaulBinary.run(
            ["queue", "run", "-q", "-j", "2", "--retry", "0", "--state", store.path], environment: ["HAUL_LEASE_SECONDS": "2"], timeout: 30)

        #expect(next.status == 0, "next: \(next.stderr)")
        #expect(Date().timeIntervalSince(started) < 15, "the second run took \(Date().timeIntervalSince(started)) s")
        let items = try store.items()
        #expect(items.values.count == ids.count)
        for id in ids { #expect(items.state(id) == "completed", "item \(id): \(items.values)") }
        for (index, body) in bodies.enumerated() {
            #expect(Disk.difference(out.file("k\(index).bin"), body) == nil)
            let asked = server.requests.filter { $0.path == "/k\(index).bin" }.count
            #expect(asked == (index == 0 ? 2 : 1), "k\(index).bin asked \(asked) times")
        }
    }

    @Test(
        """
        GIVEN twelve queued items WHEN two runs of two jobs each, claiming four ahead, work the store at once \
        THEN every item completes bit-exact, each fetched exactly once (no two writers of one destination)
        """,
        .timeLimit(.minutes(1)))
    func twoRunsClaimingAheadOnOneStoreFetchEachItemOnce() throws {
        let (server, store, out, ids, bodies) = try Self.queued("t", count: 12, slow: 4, seed: 3_830)
        let arguments = ["queue", "run", "-q", "-j", "2", "--claim-batch", "4", "--retry", "0", "--state", store.path]
        let first = try RunningHaul(arguments)
        let second = try RunningHaul(arguments)

        #expect(try first.wait(timeout: 40) == .exited(0), "first: \(first.stderr)")
        #expect(try second.wait(timeout: 40) == .exited(0), "second: \(second.stderr)")

        let items = try store.items()
        for id in ids { #expect(items.state(id) == "completed", "item \(id): \(items.values)") }
        for (index, body) in bodies.enumerated() {
            #expect(Disk.difference(out.file("t\(index).bin"), body) == nil)
            let asked = server.requests.filter { $0.path == "/t\(index).bin" }.count
            #expect(asked == 1, "t\(index).bin asked \(asked) times")
        }
    }

    @Test(
        "GIVEN five queued items WHEN a run of one job claims up to 1024 ahead THEN all five complete bit-exact, each fetched once",
        .timeLimit(.minutes(1)))
    func aClaimBatchFarAboveTheQueueTakesWhatThereIs() throws {
        let (server, store, out, ids, bodies) = try Self.queued("c", count: 5, slow: 0, seed: 3_840)
        let run = try store.haul(["run", "-q", "-j", "1", "--claim-batch", "1024", "--retry", "0"])
        #expect(run.status == 0, "run: \(run.stderr)")
        let items = try store.items()
        for id in ids { #expect(items.state(id) == "completed") }
        for (index, body) in bodies.enumerated() { #expect(Disk.difference(out.file("c\(index).bin"), body) == nil) }
        #expect(server.requests.count == 5)
    }

    @Test(
        """
        GIVEN haul serve, which takes items one at a time as its workers ask (it never claims ahead) \
        WHEN it is started with --claim-batch THEN it is refused as bad usage (exit 2), saying the option is not serve's, \
        instead of taking it and doing nothing with it; and serve's help does not offer it
        """,
        .timeLimit(.minutes(1)))
    func serveRefusesAClaimBatchItWouldIgnore() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-a38")
        let started = try HaulBinary.run(
            ["serve", "--claim-batch", "4", "--listen", "127.0.0.1:0", "--state", work.file("state"), "-d", work.file("dl")], timeout: 5)
        #expect(started.status == 2, "status \(started.status), stderr: \(started.stderr)")
        #expect(started.stderr.contains("--claim-batch does not apply to 'haul serve'"), "stderr: \(started.stderr)")
        let help = try HaulBinary.run(["serve", "--help"])
        #expect(!help.stdoutString.contains("--claim-batch"), "help: \(help.stdoutString)")
    }

    // MARK: the figures ticker

    /// Every `progress` of each download before its `completed`: bytes never back, never past the
    /// total, nothing after the completion, and the last equal to the file's size. Returns the
    /// problems found.
    /// Serves each of `bodies` at "/NAME" and writes their URLs, one a line, to `list` (`-i`).
    private static func serve(_ bodies: [String: [UInt8]], on server: FaultServer, listedIn list: String) throws {
        for (name, body) in bodies { server.setResource("/" + name, body: body) }
        let urls = bodies.keys.sorted().map { server.url("/" + $0) }.joined(separator: "\n") + "\n"
        try Disk.write(Array(urls.utf8), to: list)
    }

    private static func progressProblems(_ events: [[String: Any]]) -> [String] {
        var problems: [String] = []
        var last: [Int: Int64] = [:]
        var completed: Set<Int> = []
        for event in events {
            guard let id = (event["id"] as? NSNumber)?.intValue else { continue }
            switch event["event"] as? String {
            case "progress":
                let bytes = (event["bytes"] as? NSNumber)?.int64Value ?? -1
                let total = (event["totalBytes"] as? NSNumber)?.int64Value
                if completed.contains(id) { problems.append("#\(id): progress after its completion: \(event)") }
                if bytes < (last[id] ?? 0) { problems.append("#\(id): bytes went back from \(last[id] ?? 0): \(event)") }
                if let total, bytes > total { problems.append("#\(id): bytes past the total: \(event)") }
                last[id] = bytes
            case "completed":
                completed.insert(id)
                let bytes = (event["bytes"] as? NSNumber)?.int64Value
                let path = event["path"] as? String ?? ""
                let size = Disk.size(path)
                if bytes != size { problems.append("#\(id): completed with \(bytes ?? -1) bytes, the file has \(size ?? -1)") }
                if let reported = last[id], reported != size { problems.append("#\(id): last progress \(reported), the file has \(size ?? -1)") }
            default:
                break
            }
        }
        return problems
    }

    @Test(
        """
        GIVEN a batch of 1,000 files of 0, 1 or a few bytes and eight slow ones WHEN 64 jobs download them with --json \
        THEN every file completes bit-exact and every download's figures are true: bytes never back, never past the total, \
        nothing after its completion, the last report the file's size
        """,
        .timeLimit(.minutes(1)))
    func aThousandTinyDownloadsAtOnceKeepTheirFiguresTrue() throws {
        let server = try FaultServer()
        let work = try TemporaryDirectory(prefix: "haul-cli-a38")
        var bodies: [String: [UInt8]] = [:]
        for index in 0..<1_000 {
            bodies["t\(index).bin"] = TestData.bytes(count: [0, 1, 3, 700][index % 4], seed: 3_850 + UInt64(index))
        }
        for index in 0..<8 {
            bodies["s\(index).bin"] = TestData.bytes(count: 150_000, seed: 3_860 + UInt64(index))
            server.setPersistentFaults("/s\(index).bin", [.throttle(bytesPerSecond: 300_000)])
        }
        try Self.serve(bodies, on: server, listedIn: work.file("list"))

        let run = try HaulBinary.run(
            ["--json", "-j", "64", "--retry", "0", "-i", work.file("list"), "-d", work.file("out"), "--state", work.file("state")], timeout: 50)

        #expect(run.status == 0, "stderr: \(run.stderr.suffix(2_000))")
        for (name, body) in bodies { #expect(Disk.difference(work.file("out/" + name), body) == nil, "\(name)") }
        let events = JSONLines.parse(run.stdoutString)
        #expect(events.filter { $0["event"] as? String == "completed" }.count == bodies.count)
        let problems = Self.progressProblems(events)
        #expect(problems.isEmpty, "\(problems.count) problems: \(problems.prefix(10))")
    }

    @Test(
        """
        GIVEN eight files of 3 MB served at 2 MB/s each WHEN a batch of 8 jobs fetches them over 4 connections each, or as \
        many as add speed (one first, more joining mid-download), with --json THEN their figures stay true while the \
        segments' reporter and the connection's take turns
        """,
        .timeLimit(.minutes(1)), arguments: [["-x", "4"], []])
    func segmentedDownloadsKeepTheirFiguresTrueAcrossReporters(connections: [String]) throws {
        let server = try FaultServer()
        let work = try TemporaryDirectory(prefix: "haul-cli-a38")
        var bodies: [String: [UInt8]] = [:]
        for index in 0..<8 {
            bodies["x\(index).bin"] = TestData.bytes(count: 3_000_000, seed: 3_880 + UInt64(index))
            server.setPersistentFaults("/x\(index).bin", [.throttle(bytesPerSecond: 2_000_000)])
        }
        try Self.serve(bodies, on: server, listedIn: work.file("list"))

        let run = try HaulBinary.run(
            ["--json", "-j", "8"] + connections + ["--retry", "0", "-i", work.file("list"), "-d", work.file("out"), "--state", work.file("state")],
            timeout: 50)

        #expect(run.status == 0, "stderr: \(run.stderr.suffix(2_000))")
        for (name, body) in bodies { #expect(Disk.difference(work.file("out/" + name), body) == nil, "\(name)") }
        let events = JSONLines.parse(run.stdoutString)
        #expect(events.filter { $0["event"] as? String == "progress" }.count > 16)
        let problems = Self.progressProblems(events)
        #expect(problems.isEmpty, "\(problems.count) problems: \(problems.prefix(10))")
    }

    /// The events of a `/haul/events` stream's text, in order: (name, gid).
    private static func streamEvents(_ text: String) -> [(name: String, gid: String, data: [String: Any])] {
        text.components(separatedBy: "\n\n").compactMap { block in
            let lines = block.split(separator: "\n").map(String.init)
            guard let name = lines.first(where: { $0.hasPrefix("event: ") })?.dropFirst(7),
                let data = lines.first(where: { $0.hasPrefix("data: ") })?.dropFirst(6),
                let object = (try? JSONSerialization.jsonObject(with: Data(data.utf8))) as? [String: Any]
            else { return nil }
            let params = (object["params"] as? [[String: Any]])?.first
            guard let gid = (object["gid"] as? String) ?? (params?["gid"] as? String) else { return nil }
            return (String(name), gid, object)
        }
    }

    @Test(
        """
        GIVEN haul serve running sixteen slow downloads, its event stream open WHEN each is paused and unpaused eight times \
        from sixteen clients at once, then removed THEN no progress of a download comes between its pause (or stop) and its \
        next start, none after its removal, bytes never go back while it runs, and aria2.tellActive is empty and stays so
        """,
        .timeLimit(.minutes(1)))
    func pausesAndRemovalsInTheMiddleOfLooksLeaveNoFiguresBehind() throws {
        let server = try FaultServer()
        for index in 0..<16 {
            server.setResource("/p\(index).bin", body: TestData.bytes(count: 3_000_000, seed: 3_870 + UInt64(index)))
            server.setPersistentFaults("/p\(index).bin", [.throttle(bytesPerSecond: 200_000)])
        }
        let work = try TemporaryDirectory(prefix: "haul-serve-a38")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"), extra: ["-j", "16", "-x", "1"])
        defer { _ = try? serve.stop() }
        let stream = Process()
        stream.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        stream.arguments = ["-sN", "--max-time", "40", "\(serve.base)/haul/events?token=\(serve.secret)"]
        _ = FileManager.default.createFile(atPath: work.file("events"), contents: nil)
        let events = try FileHandle(forWritingTo: URL(fileURLWithPath: work.file("events")))
        stream.standardOutput = events
        try stream.run()
        defer {
            // Our own curl, by its PID (SIGTERM left it running until its --max-time).
            kill(stream.processIdentifier, SIGKILL)
            stream.waitUntilExit()
        }
        usleep(300_000)
        let gids = try (0..<16).map { index in
            try #require(try serve.result("aria2.addUri", [[server.url("/p\(index).bin")]]) as? String)
        }
        #expect(try eventually(10) { (try serve.result("aria2.tellActive") as? [Any])?.count == 16 })
        usleep(500_000)

        let caller = SharedServe(serve: serve)
        let clients = DispatchGroup()
        for gid in gids {
            clients.enter()
            Thread.detachNewThread { [clients] in
                defer { clients.leave() }
                for _ in 0..<8 {
                    _ = try? caller.serve.call("aria2.pause", [gid])
                    usleep(UInt32.random(in: 0...60_000))
                    _ = try? caller.serve.call("aria2.unpause", [gid])
                    usleep(UInt32.random(in: 50_000...150_000))
                }
                _ = try? caller.serve.call("aria2.remove", [gid])
            }
        }
        #expect(clients.wait(timeout: .now() + 30) == .success)
        let active = try serve.result("aria2.tellActive") as? [Any]
        usleep(1_000_000)
        let stillActive = try serve.result("aria2.tellActive") as? [Any]

        #expect(active?.isEmpty == true, "active right after the removals: \(active ?? [])")
        #expect(stillActive?.isEmpty == true, "active a second later: \(stillActive ?? [])")
        let text = String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: work.file("events")))) ?? Data(), as: UTF8.self)
        var running: [String: Bool] = [:]
        var last: [String: Int64] = [:]
        var problems: [String] = []
        var progressCount = 0
        for event in Self.streamEvents(text) {
            switch event.name {
            case "haul.progress":
                progressCount += 1
                let bytes = Int64(event.data["completedLength"] as? String ?? "") ?? -1
                if running[event.gid] != true { problems.append("\(event.gid): progress while not running: \(event.data)") }
                if bytes < (last[event.gid] ?? 0) { problems.append("\(event.gid): back from \(last[event.gid] ?? 0): \(event.data)") }
                last[event.gid] = bytes
            case "aria2.onDownloadStart":
                running[event.gid] = true
                last[event.gid] = nil
            default:
                running[event.gid] = false
            }
        }
        #expect(progressCount > 0, "no progress seen: \(text.prefix(500))")
        #expect(problems.isEmpty, "\(problems.count) problems: \(problems.prefix(8))")
        let status = try serve.result("aria2.tellStatus", [gids[0], ["status"]]) as? [String: Any]
        #expect(status?["status"] as? String == "removed")
    }
}

/// A `ServeProcess` called from several threads at once.
private struct SharedServe: @unchecked Sendable {
    // @unchecked: its calls read only what it was started with (its port and secret) and run curl.
    let serve: ServeProcess
}
