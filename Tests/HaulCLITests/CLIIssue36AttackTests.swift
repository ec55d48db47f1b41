import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 36 attacked: running a finished download again (item 11), the figures, the limits, space. Each test names the behaviour
/// expected; a failing one is a defect found.
@Suite("issue 36 attack: run again after completion, figures")
struct CLIIssue36AttackTests {
    @Test func aPostWithAnotherBodyIsNotAlreadyComplete() throws {
        // GIVEN a file haul downloaded with POST and one body
        let server = try FaultServer()
        server.setResource("/report", body: TestData.bytes(count: 40_000, seed: 360))
        let directory = try TemporaryDirectory()
        let output = directory.file("report.csv")
        let first = try HaulBinary.run(["-q", "--data", "month=1", "-o", output, server.url("/report")])
        #expect(first.status == 0, "stderr: \(first.stderr)")
        let requestsAfterFirst = server.requests.count
        // WHEN the same URL is asked for with another body (another request: another answer)
        let second = try HaulBinary.run(["--data", "month=2", "-o", output, server.url("/report")])
        // THEN the first answer proves nothing for the second request: it is not "already complete"
        // (it is refused as a file in the way, or fetched), never accepted without a request
        #expect(!second.stderr.contains("already complete"), "stderr: \(second.stderr)")
        #expect(second.status != 0 || server.requests.count > requestsAfterFirst, "stderr: \(second.stderr)")
    }

    @Test func aWrongChecksumOnAFinishedFileNamesNoFileThatIsNotThere() throws {
        // GIVEN a file haul downloaded to completion
        let server = try FaultServer()
        let body = TestData.bytes(count: 30_000, seed: 361)
        server.setResource("/sum.bin", body: body)
        let directory = try TemporaryDirectory()
        let output = directory.file("sum.bin")
        #expect(try HaulBinary.run(["-q", "-o", output, server.url("/sum.bin")]).status == 0)
        // WHEN the same request runs again with a checksum the file does not have
        let wrong = String(repeating: "0", count: 64)
        let again = try HaulBinary.run(["-o", output, "--checksum", "sha256=\(wrong)", server.url("/sum.bin")])
        // THEN it fails as a checksum mismatch, the file is untouched, and the message names no
        // file that is not there ("The data is kept in <partial>" for a partial that never existed)
        #expect(again.status != 0, "stderr: \(again.stderr)")
        #expect(Disk.difference(output, body) == nil)
        if let range = again.stderr.range(of: "kept in ") {
            let token = again.stderr[range.upperBound...].prefix { !$0.isWhitespace }
            let path = String(token).trimmingCharacters(in: CharacterSet(charactersIn: ".;,)"))
            #expect(FileManager.default.fileExists(atPath: path), "names \(path), which does not exist; stderr: \(again.stderr)")
        }
        // AND the same request without the checksum is still already complete, with no request
        let requestsBefore = server.requests.count
        let third = try HaulBinary.run(["-o", output, server.url("/sum.bin")])
        #expect(third.status == 0, "stderr: \(third.stderr)")
        #expect(third.stderr.contains("already complete"), "stderr: \(third.stderr)")
        #expect(server.requests.count == requestsBefore)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["sum.bin"])
    }

    @Test
    func aDirectoryDownloadRunAgainIsAlreadyComplete() throws {
        // GIVEN a file haul downloaded with -d (the name from the URL)
        let server = try FaultServer()
        let body = TestData.bytes(count: 25_000, seed: 362)
        server.setResource("/dir.bin", body: body)
        let directory = try TemporaryDirectory()
        #expect(try HaulBinary.run(["-q", "-d", directory.path, server.url("/dir.bin")]).status == 0)
        let requestsAfterFirst = server.requests.count
        // WHEN the same command runs again
        let second = try HaulBinary.run(["-d", directory.path, server.url("/dir.bin")])
        // THEN it succeeds at once, as with -o: no request, the one file as it was
        #expect(second.status == 0, "stderr: \(second.stderr)")
        #expect(second.stderr.contains("already complete"), "stderr: \(second.stderr)")
        #expect(server.requests.count == requestsAfterFirst)
        #expect(Disk.difference(directory.file("dir.bin"), body) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["dir.bin"])
    }

    @Test
    func aServerNamedDirectoryDownloadRunAgainIsAlreadyComplete() throws {
        // GIVEN a file haul downloaded with -d, named by the server (Content-Disposition)
        let server = try FaultServer()
        let body = TestData.bytes(count: 25_000, seed: 363)
        server.setResource("/download", body: body)
        server.setPersistentFaults("/download", [.contentDisposition("attachment; filename=\"named.bin\"")])
        let directory = try TemporaryDirectory()
        #expect(try HaulBinary.run(["-q", "-d", directory.path, server.url("/download?id=7")]).status == 0)
        // WHEN the same command runs again
        let second = try HaulBinary.run(["-d", directory.path, server.url("/download?id=7")])
        // THEN it succeeds (already complete, or fetched and found the same), leaving one file, bit-exact
        #expect(second.status == 0, "stderr: \(second.stderr)")
        #expect(Disk.difference(directory.file("named.bin"), body) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["named.bin"])
    }

    @Test
    func aFileRewrittenInPlaceWithItsTimeRestoredIsRefused() throws {
        // GIVEN a file haul downloaded, then rewritten in place with other bytes of the same size
        // and its modification time put back (as `rsync --inplace -t` or `touch -r` do)
        let server = try FaultServer()
        let body = TestData.bytes(count: 20_000, seed: 364)
        server.setResource("/inplace.bin", body: body)
        let directory = try TemporaryDirectory()
        let output = directory.file("inplace.bin")
        #expect(try HaulBinary.run(["-q", "-o", output, server.url("/inplace.bin")]).status == 0)
        // (later than the allowance the mark's bound leaves for setting it, and than a coarse
        // change-time tick: a change within it is the one a mark cannot see, see FinishedMark)
        Thread.sleep(forTimeInterval: 0.02)
        var before = stat()
        #expect(stat(output, &before) == 0)
        let other = TestData.bytes(count: body.count, seed: 365)
        let handle = try #require(FileHandle(forWritingAtPath: output))
        try handle.write(contentsOf: Data(other))
        try handle.close()
        var times = [before.st_atim, before.st_mtim]
        #expect(utimensat(AT_FDCWD, output, &times, 0) == 0)
        // WHEN the same command runs again
        let again = try HaulBinary.run(["-o", output, server.url("/inplace.bin")])
        // THEN the other bytes are not taken for the finished download (the change time moved)
        var after = stat()
        #expect(stat(output, &after) == 0)
        let mark = try ProcessRunner.run(
            "/usr/bin/python3", ["-c", "import os, sys; print(os.getxattr(sys.argv[1], 'user.haul.finished').decode())", output], environment: nil,
            timeout: 10)
        let shown = "mark \(mark.stdoutString); ctime \(after.st_ctim.tv_sec).\(after.st_ctim.tv_nsec)"
        #expect(!again.stderr.contains("already complete"), "stderr: \(again.stderr); \(shown)")
        #expect(again.status != 0, "stderr: \(again.stderr)")
    }

    @Test func anAlreadyCompleteFileReportsItsTotalAndResumesNothing() throws {
        // GIVEN a file haul downloaded to completion
        let server = try FaultServer()
        server.setResource("/whole.bin", body: TestData.bytes(count: 45_000, seed: 366))
        let directory = try TemporaryDirectory()
        let output = directory.file("whole.bin")
        #expect(try HaulBinary.run(["-q", "-o", output, server.url("/whole.bin")]).status == 0)
        // WHEN the same request runs again with --json
        let again = try HaulBinary.run(["--json", "-o", output, server.url("/whole.bin")])
        #expect(again.status == 0, "stderr: \(again.stderr)")
        // THEN its progress is 45,000 of 45,000 bytes (a bar at 100%, not of an unknown total)
        let text = String(decoding: again.stdout, as: UTF8.self)
        let objects = JSONLines.parse(text)
        let progress = objects.filter { $0["event"] as? String == "progress" }
        for report in progress {
            #expect((report["totalBytes"] as? NSNumber)?.int64Value == 45_000, "\(text)")
        }
        // AND on a terminal nothing is said to be resumed: no byte was fetched, nothing was continued
        let human = try HaulBinary.run(["-o", output, server.url("/whole.bin")])
        #expect(human.status == 0, "stderr: \(human.stderr)")
        #expect(!human.stderr.contains("resuming"), "stderr: \(human.stderr)")
    }

    @Test(.timeLimit(.minutes(1)))
    func progressComesEveryIntervalAndTrueUnderALowLimit() throws {
        // GIVEN a 3 MB file and a limit of 2,000 B/s (one connection)
        let server = try FaultServer()
        server.setResource("/slow.bin", body: TestData.bytes(count: 3_000_000, seed: 367))
        let directory = try TemporaryDirectory()
        // WHEN haul fetches it with --json for 5 s, then is interrupted
        let running = try RunningHaul(["--json", "-x", "1", "--limit-rate", "2000", "-o", directory.file("slow.bin"), server.url("/slow.bin")])
        Thread.sleep(forTimeInterval: 5)
        running.send(SIGINT)
        _ = try running.wait(timeout: 20)
        // THEN progress came at the promised interval (0.25 s) whoever writes: at least 8 in 5 s
        let reports = JSONLines.parse(running.stdout).filter { $0["event"] as? String == "progress" }
        #expect(reports.count >= 8, "\(reports.count) progress events in 5 s; stdout: \(running.stdout.prefix(2000))")
        // AND no speed shown is far above the limit
        let speeds = reports.compactMap { ($0["bytesPerSecond"] as? NSNumber)?.int64Value }
        #expect(speeds.allSatisfy { $0 <= 3000 }, "speeds \(speeds) for a limit of 2000 B/s")
    }

    @Test
    func aBatchRunAgainSummarisesEveryFileAskedFor() throws {
        // GIVEN a batch of three files haul downloaded, then one of them deleted
        let server = try FaultServer()
        let directory = try TemporaryDirectory()
        var lines: [String] = []
        for index in 1...3 {
            server.setResource("/b\(index).bin", body: TestData.bytes(count: 20_000, seed: UInt64(370 + index)))
            lines.append(server.url("/b\(index).bin"))
        }
        let list = directory.file("list.txt")
        try (lines.joined(separator: "\n") + "\n").write(toFile: list, atomically: true, encoding: .utf8)
        let out = directory.file("out")
        #expect(try HaulBinary.run(["-q", "-i", list, "-d", out]).status == 0)
        // WHEN the same batch runs again with --json, every file already complete
        let again = try HaulBinary.run(["--json", "-i", list, "-d", out])
        #expect(again.status == 0, "stderr: \(again.stderr)")
        // THEN it still ends with a summary of the three files asked for
        let summaries = JSONLines.parse(String(decoding: again.stdout, as: UTF8.self)).filter { $0["event"] as? String == "summary" }
        #expect(summaries.count == 1, "stdout: \(String(decoding: again.stdout, as: UTF8.self))")
        #expect(summaries.last.flatMap { ($0["total"] as? NSNumber)?.intValue } == 3, "\(summaries)")
        #expect(summaries.last.flatMap { ($0["alreadyComplete"] as? NSNumber)?.intValue } == 3, "\(summaries)")
        #expect(summaries.last.flatMap { ($0["completed"] as? NSNumber)?.intValue } == 0, "\(summaries)")
        // AND when one file was deleted, the summary still covers all three (one fetched, two already complete)
        #expect(unlink(out + "/b1.bin") == 0)
        let third = try HaulBinary.run(["--json", "-i", list, "-d", out])
        #expect(third.status == 0, "stderr: \(third.stderr)")
        let last = JSONLines.parse(String(decoding: third.stdout, as: UTF8.self)).filter { $0["event"] as? String == "summary" }.last
        #expect(last.flatMap { ($0["total"] as? NSNumber)?.intValue } == 3, "summary \(String(describing: last))")
        #expect(last.flatMap { ($0["completed"] as? NSNumber)?.intValue } == 1, "summary \(String(describing: last))")
        #expect(last.flatMap { ($0["alreadyComplete"] as? NSNumber)?.intValue } == 2, "summary \(String(describing: last))")
    }

    @Test(.timeLimit(.minutes(1)))
    func aLimitOfOneThenNoneLetsTheDownloadFinishWithTrueFigures() throws {
        // GIVEN haul serve fetching a 2 MB file at 1 B/s
        let server = try FaultServer()
        let body = TestData.bytes(count: 2_000_000, seed: 380)
        server.setResource("/one.bin", body: body)
        let work = try TemporaryDirectory(prefix: "haul-serve-one")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("out"))
        defer { _ = try? serve.stop() }
        let gid = try #require(try serve.result("aria2.addUri", [[server.url("/one.bin")], ["max-download-limit": "1"]]) as? String)
        Thread.sleep(forTimeInterval: 1)
        // WHEN the limit changes rapidly, then is lifted (0: none), per download and overall
        for limit in ["1", "0", "1", "2", "1"] {
            _ = try serve.result("aria2.changeOption", [gid, ["max-download-limit": limit]])
            _ = try serve.result("aria2.changeGlobalOption", [["max-overall-download-limit": limit]])
        }
        _ = try serve.result("aria2.changeGlobalOption", [["max-overall-download-limit": "0"]])
        _ = try serve.result("aria2.changeOption", [gid, ["max-download-limit": "0"]])
        // THEN it completes within 10 s, bit-exact, and no figure read on the way passes the total
        var status: [String: Any] = [:]
        var over: [String] = []
        let finished = Disk.waitUntil(timeout: 10) {
            status = (try? serve.result("aria2.tellStatus", [gid]) as? [String: Any]) ?? [:]
            let completed = Int64(status["completedLength"] as? String ?? "") ?? 0
            if completed > Int64(body.count) { over.append("\(completed)") }
            return status["status"] as? String == "complete"
        }
        #expect(finished, "status \(status)")
        #expect(over.isEmpty, "completedLength past the total: \(over)")
        #expect(Disk.difference(work.file("out") + "/one.bin", body) == nil)
    }

    @Test func aRestartAfterAChangedFileSaysWhatItDiscardedAndResumedNothing() throws {
        // GIVEN a 300 KB file whose first answer is cut after 100,000 bytes, and which changes
        // on the server before the retry
        let server = try FaultServer()
        let old = TestData.bytes(count: 300_000, seed: 381)
        let new = TestData.bytes(count: 300_000, seed: 382)
        server.setResource("/changed.bin", body: old, etag: "\"v1\"")
        server.enqueueFaults(
            "/changed.bin", [.dropAfter(bytes: 100_000), .replaceResource(body: new, etag: "\"v2\"", lastModified: nil)])
        let directory = try TemporaryDirectory()
        let output = directory.file("changed.bin")
        // WHEN haul fetches it over one connection with --json
        let result = try HaulBinary.run(["--json", "-x", "1", "-o", output, server.url("/changed.bin")])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, new) == nil)
        let objects = JSONLines.parse(String(decoding: result.stdout, as: UTF8.self))
        // THEN the restart says how many bytes it threw away, and the completion resumed from nothing
        let restarts = objects.filter { $0["event"] as? String == "restarted" }
        #expect(restarts.count == 1, "\(objects)")
        let discarded = restarts.first.flatMap { ($0["discardedBytes"] as? NSNumber)?.int64Value } ?? -1
        #expect(discarded > 0 && discarded <= 100_000, "discardedBytes \(discarded)")
        let completed = objects.first { $0["event"] as? String == "completed" }
        #expect(completed.flatMap { ($0["resumedFrom"] as? NSNumber)?.int64Value } == 0, "\(String(describing: completed))")
        // AND no progress event passes the file's total or goes backwards after the restart
        let bytes = objects.filter { $0["event"] as? String == "progress" }.compactMap { ($0["bytes"] as? NSNumber)?.int64Value }
        #expect(bytes.allSatisfy { $0 <= 300_000 }, "\(bytes)")
    }

    @Test func aRelaunchThatFindsTheFileChangedResumedNothing() throws {
        // GIVEN a run cut after 100,000 bytes of a 300 KB file (no retry), then the file changed on the server
        let server = try FaultServer()
        let new = TestData.bytes(count: 300_000, seed: 384)
        server.setResource("/relaunch.bin", body: TestData.bytes(count: 300_000, seed: 383), etag: "\"v1\"")
        server.enqueueFaults("/relaunch.bin", [.dropAfter(bytes: 100_000)])
        let directory = try TemporaryDirectory()
        let output = directory.file("relaunch.bin")
        let first = try HaulBinary.run(["-q", "--retry", "0", "-x", "1", "-o", output, server.url("/relaunch.bin")])
        #expect(first.status != 0, "stderr: \(first.stderr)")
        server.setResource("/relaunch.bin", body: new, etag: "\"v2\"")
        // WHEN the same command runs again with --json
        let again = try HaulBinary.run(["--json", "-x", "1", "-o", output, server.url("/relaunch.bin")])
        #expect(again.status == 0, "stderr: \(again.stderr)")
        #expect(Disk.difference(output, new) == nil)
        // THEN the completion resumed from nothing (the 100,000 bytes were thrown away), and says so
        let objects = JSONLines.parse(String(decoding: again.stdout, as: UTF8.self))
        let completed = objects.first { $0["event"] as? String == "completed" }
        #expect(completed.flatMap { ($0["resumedFrom"] as? NSNumber)?.int64Value } == 0, "\(String(describing: completed))")
        let restart = objects.first { $0["event"] as? String == "restarted" }
        #expect(restart.flatMap { ($0["discardedBytes"] as? NSNumber)?.int64Value } ?? 0 > 0, "\(objects)")
    }

    @Test(.timeLimit(.minutes(1)))
    func aSegmentedDownloadRunAgainIsAlreadyComplete() throws {
        // GIVEN a 16 MB file haul downloaded over four connections, and one cut and resumed
        let server = try FaultServer()
        let body = TestData.bytes(count: 16_000_000, seed: 385)
        server.setResource("/seg.bin", body: body, etag: "\"s1\"")
        let directory = try TemporaryDirectory()
        let output = directory.file("seg.bin")
        let first = try HaulBinary.run(["-q", "-x", "4", "-o", output, server.url("/seg.bin")])
        #expect(first.status == 0, "stderr: \(first.stderr)")
        server.setResource("/cut.bin", body: body, etag: "\"c1\"")
        server.enqueueFaults("/cut.bin", [.dropAfter(bytes: 3_000_000)])
        let cut = directory.file("cut.bin")
        #expect(try HaulBinary.run(["-q", "--retry", "0", "-x", "1", "-o", cut, server.url("/cut.bin")]).status != 0)
        #expect(try HaulBinary.run(["-q", "-x", "4", "-o", cut, server.url("/cut.bin")]).status == 0)
        let requestsBefore = server.requests.count
        // WHEN the same commands run again
        let again = try HaulBinary.run(["-x", "4", "-o", output, server.url("/seg.bin")])
        let cutAgain = try HaulBinary.run(["-x", "4", "-o", cut, server.url("/cut.bin")])
        // THEN both are already complete, with no request
        #expect(again.status == 0 && again.stderr.contains("already complete"), "stderr: \(again.stderr)")
        #expect(cutAgain.status == 0 && cutAgain.stderr.contains("already complete"), "stderr: \(cutAgain.stderr)")
        #expect(server.requests.count == requestsBefore)
        #expect(Disk.difference(output, body) == nil)
        #expect(Disk.difference(cut, body) == nil)
    }

    @Test
    func aQueueItemIntoADirectoryAddedAgainIsAlreadyComplete() throws {
        // GIVEN a queue item (-d) haul downloaded, then removed from the queue (its file stays)
        let server = try FaultServer()
        let body = TestData.bytes(count: 30_000, seed: 386)
        server.setResource("/q.bin", body: body)
        let work = try TemporaryDirectory()
        let state = work.file("state")
        let out = work.file("out")
        #expect(try HaulBinary.run(["queue", "add", "--state", state, "-d", out, server.url("/q.bin")]).status == 0)
        #expect(try HaulBinary.run(["queue", "run", "--state", state, "-q"]).status == 0)
        #expect(try HaulBinary.run(["queue", "rm", "--state", state, "1"]).status == 0)
        // WHEN the same download is added again and the queue runs
        #expect(try HaulBinary.run(["queue", "add", "--state", state, "-d", out, server.url("/q.bin")]).status == 0)
        let again = try HaulBinary.run(["queue", "run", "--state", state, "--json"])
        // THEN it completes as already complete (as with -o), not failed as a file in the way
        let text = String(decoding: again.stdout, as: UTF8.self)
        let events = JSONLines.events(JSONLines.parse(text))
        #expect(!events.contains("failed"), "stdout: \(text)")
        #expect(events.contains("completed"), "stdout: \(text)")
        #expect(Disk.difference(out + "/q.bin", body) == nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func extremeLimitsThroughTheRPCKeepTheServerAliveAndTheDownloadMoving() throws {
        // GIVEN haul serve fetching a 4 MB file at 1 KiB/s over the overall limit
        let server = try FaultServer()
        let body = TestData.bytes(count: 4_000_000, seed: 387)
        server.setResource("/extreme.bin", body: body)
        let work = try TemporaryDirectory(prefix: "haul-serve-extreme")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("out"))
        defer { _ = try? serve.stop() }
        _ = try serve.result("aria2.changeGlobalOption", [["max-overall-download-limit": "1024"]])
        let gid = try #require(try serve.result("aria2.addUri", [[server.url("/extreme.bin")], ["max-download-limit": "1"]]) as? String)
        Thread.sleep(forTimeInterval: 0.5)
        // WHEN limits at the edges are set, valid or not (each answered, never a crash)
        for value in ["1099511627776", "1099511627777", "-1", "1T", "1024G", "0.5", "9223372036854775807", "1", "0"] {
            _ = try serve.call("aria2.changeOption", [gid, ["max-download-limit": value]])
            _ = try serve.call("aria2.changeGlobalOption", [["max-overall-download-limit": value]])
        }
        // THEN with both limits at 0 (none) the download completes, bit-exact, and serve still answers
        var status: [String: Any] = [:]
        let finished = Disk.waitUntil(timeout: 15) {
            status = (try? serve.result("aria2.tellStatus", [gid]) as? [String: Any]) ?? [:]
            return status["status"] as? String == "complete"
        }
        #expect(finished, "status \(status)")
        #expect(Disk.difference(work.file("out") + "/extreme.bin", body) == nil)
        #expect(serve.running.process.isRunning)
    }

    @Test(.timeLimit(.minutes(1)))
    func tellStatusNeverStandsStillForMoreThanASecondUnderALowLimit() throws {
        // GIVEN haul serve fetching a 4 MB file over one connection at 8 KiB/s
        let server = try FaultServer()
        server.setResource("/low.bin", body: TestData.bytes(count: 4_000_000, seed: 388))
        let work = try TemporaryDirectory(prefix: "haul-serve-low")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("out"))
        defer { _ = try? serve.stop() }
        let gid = try #require(
            try serve.result("aria2.addUri", [[server.url("/low.bin")], ["split": "1", "max-download-limit": "8192"]]) as? String)
        // WHEN tellStatus is read every 0.5 s for 6 s
        var seen: [(completed: Int64, speed: Int64)] = []
        for _ in 0..<12 {
            Thread.sleep(forTimeInterval: 0.5)
            let status = try #require(try serve.result("aria2.tellStatus", [gid]) as? [String: Any])
            seen.append((Int64(status["completedLength"] as? String ?? "") ?? -1, Int64(status["downloadSpeed"] as? String ?? "") ?? -1))
        }
        // THEN after the first 2 s completedLength moves at least every second (as aria2's does)
        let later = seen.dropFirst(4).map(\.completed)
        let stillPairs = zip(later, later.dropFirst()).map { $0 == $1 }
        let stillForASecond = zip(stillPairs, stillPairs.dropFirst()).contains { $0 && $1 }
        #expect(!stillForASecond, "completedLength \(seen.map(\.completed))")
        // AND the speed shown is about the limit, never twice it
        #expect(seen.dropFirst(4).allSatisfy { $0.speed > 0 && $0.speed <= 12_288 }, "downloadSpeed \(seen.map(\.speed))")
    }

    @Test(.timeLimit(.minutes(1)))
    func anOverallLimitIsSharedBetweenTwoDownloadsOfOneConnectionEach() throws {
        // GIVEN haul serve with an overall limit of 64 KiB/s and two 4 MB downloads of one connection each
        let server = try FaultServer()
        server.setResource("/a.bin", body: TestData.bytes(count: 4_000_000, seed: 389))
        server.setResource("/b.bin", body: TestData.bytes(count: 4_000_000, seed: 390))
        let work = try TemporaryDirectory(prefix: "haul-serve-share")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("out"))
        defer { _ = try? serve.stop() }
        _ = try serve.result("aria2.changeGlobalOption", [["max-overall-download-limit": "65536"]])
        let a = try #require(try serve.result("aria2.addUri", [[server.url("/a.bin")], ["split": "1"]]) as? String)
        let b = try #require(try serve.result("aria2.addUri", [[server.url("/b.bin")], ["split": "1"]]) as? String)
        func completed(_ gid: String) throws -> Int64 {
            let status = try #require(try serve.result("aria2.tellStatus", [gid]) as? [String: Any])
            return Int64(status["completedLength"] as? String ?? "") ?? -1
        }
        // WHEN they run for 2 s, then 4 s more
        Thread.sleep(forTimeInterval: 2)
        let (a2, b2) = (try completed(a), try completed(b))
        Thread.sleep(forTimeInterval: 4)
        let (a6, b6) = (try completed(a), try completed(b))
        // THEN each got a fair share of the 256 KiB those 4 s allow (at least 64 KiB), and together no more than the limit allows
        #expect(a6 - a2 >= 65_536 && b6 - b2 >= 65_536, "a \(a2)→\(a6), b \(b2)→\(b6)")
        #expect((a6 - a2) + (b6 - b2) <= 4 * 65_536 + 65_536, "a \(a2)→\(a6), b \(b2)→\(b6)")
        #expect(server.requests.count == 2, "\(server.requests.map { $0.header("Range") ?? "-" })")
    }

    @Test(.timeLimit(.minutes(1)))
    func aPreallocatedSegmentedPartialResumesOnTheSpaceItAlreadyHolds() throws {
        // GIVEN a 16 MiB file fetched over four connections onto a 24 MiB disk (the segments
        // reserve the whole file), paused after about a second
        let server = try FaultServer()
        let body = TestData.bytes(count: 16 << 20, seed: 391)
        server.setResource("/pre.bin", body: body, etag: "\"p1\"")
        server.setPersistentFaults("/pre.bin", [.throttle(bytesPerSecond: 1 << 20)])
        let small = try SmallFileSystem(sizeBytes: 24 << 20)
        defer { small.unmount() }
        let output = small.file("pre.bin")
        let running = try RunningHaul(["-q", "-x", "4", "--min-free-space", "0", "-o", output, server.url("/pre.bin")])
        Thread.sleep(forTimeInterval: 1.5)
        running.send(SIGINT)
        _ = try running.wait(timeout: 20)
        #expect(!Disk.exists(output))
        // WHEN the same command runs again, with the space the partial holds reserved
        server.setPersistentFaults("/pre.bin", [])
        let again = try HaulBinary.run(["-q", "-x", "4", "--min-free-space", "0", "-o", output, server.url("/pre.bin")])
        // THEN it completes bit-exact: the rest of the file needs no space it does not already hold
        #expect(again.status == 0, "stderr: \(again.stderr)")
        #expect(Disk.difference(output, body) == nil)
    }
}
