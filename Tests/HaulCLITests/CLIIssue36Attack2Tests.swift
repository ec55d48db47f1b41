import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 36 attacked again (today's changes): the one-connection reporter, the read grain under a
/// limit, the finished mark's change-time bound, a destination held by another download. Each
/// test names the behaviour expected; a disabled one is a defect found and still open.
@Suite("issue 36 attack 2: reporter, grain, finished mark, held destination")
struct CLIIssue36Attack2Tests {
    // MARK: the one-connection reporter

    @Test
    func aDownloadWaitingForItsFirstByteDoesNotSpin() throws {
        // GIVEN a server that sends its head at once and then nothing for 8 s
        let server = try FaultServer()
        server.setResource("/quiet.bin", body: TestData.bytes(count: 100_000, seed: 3601))
        server.setPersistentFaults("/quiet.bin", [.stall(afterBytes: 0, seconds: 8)])
        let directory = try TemporaryDirectory()
        let running = try RunningHaul(["--json", "-x", "1", "-o", directory.file("quiet.bin"), server.url("/quiet.bin")])
        defer { _ = try? running.wait(timeout: 20) }
        // WHEN haul waits for the body for 4 s (after its first second)
        Thread.sleep(forTimeInterval: 1.5)
        let before = ProcessFigures.of(running.pid)
        Thread.sleep(forTimeInterval: 4)
        let after = ProcessFigures.of(running.pid)
        running.send(SIGINT)
        // THEN it is idle: a reporter at 0.25 s wakes a few times a second, not a hundred
        // (as it is while a limit holds bytes back: ~27 switches/s measured)
        let switches = after.contextSwitches - before.contextSwitches
        let ticks = after.cpuTicks - before.cpuTicks
        #expect(switches < 600, "\(switches) context switches and \(ticks) CPU ticks in 4 s of waiting")
    }

    /// Context switches and CPU ticks of haul fetching `path` of a server that sends 100,000 bytes
    /// and then nothing for 8 s, over 4 s of that silence.
    static func idleFigures(engine: String) throws -> (switches: Int, ticks: Int) {
        let server = try FaultServer()
        server.setResource("/stalled.bin", body: TestData.bytes(count: 300_000, seed: 3612))
        server.setPersistentFaults("/stalled.bin", [.stall(afterBytes: 100_000, seconds: 8)])
        let directory = try TemporaryDirectory()
        let running = try RunningHaul(["--json", "--engine", engine, "-x", "1", "-o", directory.file("stalled.bin"), server.url("/stalled.bin")])
        defer { _ = try? running.wait(timeout: 20) }
        Thread.sleep(forTimeInterval: 1.5)
        let before = ProcessFigures.of(running.pid)
        Thread.sleep(forTimeInterval: 4)
        let after = ProcessFigures.of(running.pid)
        running.send(SIGINT)
        return (after.contextSwitches - before.contextSwitches, after.cpuTicks - before.cpuTicks)
    }

    @Test(.timeLimit(.minutes(1)))
    func aServerStalledMidBodyLeavesTheCurlEngineIdle() throws {
        // GIVEN/WHEN a server that stops sending after 100,000 bytes, fetched with libcurl
        let idle = try Self.idleFigures(engine: "curl")
        // THEN haul only wakes for its reports while it waits
        #expect(idle.switches < 600 && idle.ticks < 40, "\(idle.switches) context switches and \(idle.ticks) CPU ticks in 4 s of waiting")
    }

    @Test(
        .disabled(
            "open (not today's): the urlsession engine spins while a server sends nothing (702,104 context switches and 399 CPU ticks, a whole core, in 4 s)"))
    func aServerStalledMidBodyLeavesTheURLSessionEngineIdle() throws {
        // GIVEN/WHEN a server that stops sending after 100,000 bytes, fetched with URLSession
        let idle = try Self.idleFigures(engine: "urlsession")
        // THEN haul only wakes for its reports and its 50 ms polls while it waits
        #expect(idle.switches < 600 && idle.ticks < 40, "\(idle.switches) context switches and \(idle.ticks) CPU ticks in 4 s of waiting")
    }

    @Test(.timeLimit(.minutes(1)))
    func aDownloadHeldByALimitOfOneBytePerSecondIsIdle() throws {
        // GIVEN a 4 MB file fetched at 1 B/s, over one connection and over the default
        let server = try FaultServer()
        server.setResource("/one.bin", body: TestData.bytes(count: 4_000_000, seed: 3602))
        let directory = try TemporaryDirectory()
        for connections in ["1", "4"] {
            let running = try RunningHaul(
                ["--json", "-x", connections, "--limit-rate", "1", "-o", directory.file("one\(connections).bin"), server.url("/one.bin")])
            Thread.sleep(forTimeInterval: 1.5)
            let before = ProcessFigures.of(running.pid)
            Thread.sleep(forTimeInterval: 4)
            let after = ProcessFigures.of(running.pid)
            running.send(SIGINT)
            _ = try running.wait(timeout: 20)
            // THEN it reads no byte at a time and burns no CPU: few wakeups, almost no CPU
            let switches = after.contextSwitches - before.contextSwitches
            let ticks = after.cpuTicks - before.cpuTicks
            #expect(switches < 600 && ticks < 40, "-x \(connections): \(switches) context switches and \(ticks) CPU ticks in 4 s")
            // AND progress kept coming, never going back, none after the pause
            let objects = JSONLines.parse(running.stdout)
            let events = JSONLines.events(objects)
            let bytes = objects.filter { $0["event"] as? String == "progress" }.compactMap { ($0["bytes"] as? NSNumber)?.int64Value }
            #expect(bytes.count >= 12, "-x \(connections): \(bytes.count) progress events in 5.5 s")
            #expect(zip(bytes, bytes.dropFirst()).allSatisfy { $0 <= $1 }, "\(bytes)")
            #expect(events.last == "paused", "\(events)")
            #expect(Array(events.drop { $0 != "paused" }) == ["paused"], "\(events)")
        }
    }

    @Test(.timeLimit(.minutes(2)))
    func interruptedAtAnyMomentNoProgressComesAfterTheEndAndBytesNeverGoBack() throws {
        // GIVEN a 4 MB file under various limits, interrupted at various moments, then resumed to the end
        let server = try FaultServer()
        let body = TestData.bytes(count: 4_000_000, seed: 3603)
        server.setResource("/stop.bin", body: body)
        let directory = try TemporaryDirectory()
        var generator = SystemRandomNumberGenerator()
        for round in 0..<8 {
            let output = directory.file("stop\(round).bin")
            let limit = String(Int.random(in: 1_000...400_000, using: &generator))
            let running = try RunningHaul(["--json", "-x", round % 2 == 0 ? "1" : "4", "--limit-rate", limit, "-o", output, server.url("/stop.bin")])
            Thread.sleep(forTimeInterval: Double.random(in: 0.05...1.2, using: &generator))
            running.send(SIGINT)
            _ = try running.wait(timeout: 20)
            let again = try HaulBinary.run(["--json", "-x", "1", "-o", output, server.url("/stop.bin")])
            #expect(again.status == 0, "stderr: \(again.stderr)")
            // THEN in each run no progress follows paused/completed/failed, and bytes never go back
            for text in [running.stdout, String(decoding: again.stdout, as: UTF8.self)] {
                let objects = JSONLines.parse(text)
                let events = JSONLines.events(objects)
                if let end = events.firstIndex(where: { ["paused", "completed", "failed"].contains($0) }) {
                    #expect(!events[(end + 1)...].contains("progress"), "round \(round) limit \(limit): \(events)")
                }
                let bytes = objects.filter { $0["event"] as? String == "progress" }.compactMap { ($0["bytes"] as? NSNumber)?.int64Value }
                #expect(zip(bytes, bytes.dropFirst()).allSatisfy { $0 <= $1 }, "round \(round) limit \(limit): \(bytes)")
            }
            #expect(Disk.difference(output, body) == nil)
        }
    }

    // MARK: the read grain

    @Test(.timeLimit(.minutes(2)))
    func aLimitLiftedMidTransferCostsNoMoreThanNoLimit() throws {
        // GIVEN haul serve and a 100 MB file
        let server = try FaultServer()
        server.setResource("/big.bin", body: TestData.bytes(count: 100_000_000, seed: 3604))
        let work = try TemporaryDirectory(prefix: "haul-serve-grain")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("out"))
        defer { _ = try? serve.stop() }
        func fetch(_ name: String, startingLimit: String?) throws -> (ticks: Int, seconds: Double) {
            var options = ["split": "1", "out": name]
            if let startingLimit { options["max-download-limit"] = startingLimit }
            let gid = try #require(try serve.result("aria2.addUri", [[server.url("/big.bin")], options]) as? String)
            if startingLimit != nil {
                Thread.sleep(forTimeInterval: 1)
                _ = try serve.result("aria2.changeOption", [gid, ["max-download-limit": "0"]])
            }
            let before = ProcessFigures.of(serve.running.pid)
            let started = Date()
            let done = Disk.waitUntil(timeout: 60) {
                ((try? serve.result("aria2.tellStatus", [gid, ["status"]])) as? [String: Any])?["status"] as? String == "complete"
            }
            #expect(done)
            return (ProcessFigures.of(serve.running.pid).cpuTicks - before.cpuTicks, Date().timeIntervalSince(started))
        }
        // WHEN one download runs without a limit, and one starts at 1 B/s and has its limit lifted after 1 s
        let free = try fetch("free.bin", startingLimit: nil)
        let lifted = try fetch("lifted.bin", startingLimit: "1")
        // THEN once lifted it reads as a transfer without a limit does: about the same CPU
        #expect(lifted.ticks <= free.ticks * 3 / 2 + 20, "lifted: \(lifted.ticks) CPU ticks in \(lifted.seconds) s; free: \(free.ticks) in \(free.seconds) s")
    }

    @Test(.timeLimit(.minutes(1)))
    func tellStatusMovesEverySecondUnderALimitSetMidTransfer() throws {
        // GIVEN haul serve fetching a 40 MB file over one connection with no limit (the server sends 2 MB/s)
        let server = try FaultServer()
        server.setResource("/mid.bin", body: TestData.bytes(count: 40_000_000, seed: 3613))
        server.setPersistentFaults("/mid.bin", [.throttle(bytesPerSecond: 2_000_000)])
        let work = try TemporaryDirectory(prefix: "haul-serve-mid")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("out"))
        defer { _ = try? serve.stop() }
        let gid = try #require(try serve.result("aria2.addUri", [[server.url("/mid.bin")], ["split": "1"]]) as? String)
        Thread.sleep(forTimeInterval: 1)
        // WHEN a limit of 8 KiB/s is set while it runs, and tellStatus is read every 0.5 s for 6 s after 2 s
        _ = try serve.result("aria2.changeOption", [gid, ["max-download-limit": "8192"]])
        Thread.sleep(forTimeInterval: 2)
        var seen: [Int64] = []
        for _ in 0..<12 {
            Thread.sleep(forTimeInterval: 0.5)
            let status = try #require(try serve.result("aria2.tellStatus", [gid, ["completedLength"]]) as? [String: Any])
            seen.append(Int64(status["completedLength"] as? String ?? "") ?? -1)
        }
        // THEN completedLength moves at least every second, as with a limit set before the start
        let stillPairs = zip(seen, seen.dropFirst()).map { $0 == $1 }
        let stillForASecond = zip(stillPairs, stillPairs.dropFirst()).contains { $0 && $1 }
        #expect(!stillForASecond, "completedLength \(seen)")
    }

    // MARK: the finished mark

    @Test(.timeLimit(.minutes(3)))
    func theSameCommandBackToBackIsAlreadyCompleteEveryTime() throws {
        // GIVEN files haul just downloaded (one connection and four, 3 MB and 1 byte)
        let server = try FaultServer()
        server.setResource("/fast.bin", body: TestData.bytes(count: 3_000_000, seed: 3605))
        server.setResource("/tiny.bin", body: [7])
        let directory = try TemporaryDirectory()
        var refused: [String] = []
        for round in 0..<30 {
            let path = round % 3 == 2 ? "/tiny.bin" : "/fast.bin"
            let output = directory.file("fast\(round).bin")
            let first = try HaulBinary.run(["-q", "-x", round % 2 == 0 ? "1" : "4", "-o", output, server.url(path)])
            #expect(first.status == 0, "stderr: \(first.stderr)")
            // WHEN the same command runs again at once
            let requests = server.requests.count
            let again = try HaulBinary.run(["-o", output, server.url(path)])
            // THEN it is already complete, with no request, every time (a flake is a defect)
            if again.status != 0 || !again.stderr.contains("already complete") || server.requests.count != requests {
                refused.append("round \(round): exit \(again.status), \(again.stderr)")
            }
        }
        #expect(refused.isEmpty, "\(refused)")
    }

    /// What a user or another program does to a finished file.
    enum Touch: String, CaseIterable, CustomTestStringConvertible {
        case chmod, touch, touchReferenceItself, hardLink, movedAwayAndBack, copiedWithAttributesAndRenamedOver, truncatedAndRewritten

        var testDescription: String { rawValue }

        func apply(to path: String) throws {
            let python: String
            switch self {
            case .chmod: python = "os.chmod(p, 0o600)"
            case .touch: python = "os.utime(p)"
            case .touchReferenceItself: python = "s = os.stat(p); os.utime(p, ns=(s.st_atime_ns, s.st_mtime_ns))"
            case .hardLink: python = "os.link(p, p + '.link')"
            case .movedAwayAndBack: python = "os.rename(p, p + '.away'); os.rename(p + '.away', p)"
            case .copiedWithAttributesAndRenamedOver:
                // rsync's way: a temporary copy with the data, times and extended attributes, renamed over
                python = "shutil.copy2(p, p + '.tmp'); os.rename(p + '.tmp', p)"
            case .truncatedAndRewritten:
                python =
                    "s = os.stat(p); d = open(p, 'rb').read(); os.truncate(p, 0); os.truncate(p, len(d)); f = open(p, 'r+b'); f.write(d); f.close(); os.utime(p, ns=(s.st_atime_ns, s.st_mtime_ns))"
            }
            let result = try ProcessRunner.run("/usr/bin/python3", ["-c", "import os, shutil, sys; p = sys.argv[1]; " + python, path], timeout: 10)
            guard result.status == 0 else { throw TestSupportError("\(self): \(result.stderr)") }
        }
    }

    @Test(arguments: Touch.allCases)
    func aFinishedFileTouchedAfterwardsIsRefusedAndKept(_ touch: Touch) throws {
        // GIVEN a file haul downloaded, then touched in one way
        let server = try FaultServer()
        let body = TestData.bytes(count: 50_000, seed: 3606)
        server.setResource("/t.bin", body: body)
        let directory = try TemporaryDirectory()
        let output = directory.file("t.bin")
        #expect(try HaulBinary.run(["-q", "-o", output, server.url("/t.bin")]).status == 0)
        try touch.apply(to: output)
        // WHEN the same command runs again
        let again = try HaulBinary.run(["-o", output, server.url("/t.bin")])
        // THEN the file proves nothing any more: refused as a file in the way (exit 7), never
        // taken as complete, and left as it is
        #expect(again.status == 7, "stderr: \(again.stderr)")
        #expect(!again.stderr.contains("already complete"), "stderr: \(again.stderr)")
        #expect(Disk.difference(output, body) == nil)
    }

    /// A watcher that writes "ZZZZ" over the start of `name` in `directory` as soon as it is renamed
    /// into place (inotify), as a program reacting to new files would; it writes `ready` to
    /// `readyFile` once it watches.
    static let writerOnArrival = """
        import ctypes, ctypes.util, os, struct, sys
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        d, name, ready = sys.argv[1], sys.argv[2], sys.argv[3]
        fd = libc.inotify_init()
        libc.inotify_add_watch(fd, d.encode(), 0x80)
        open(ready, "w").write("ready")
        while True:
            buf = os.read(fd, 65536); i = 0; hit = False
            while i < len(buf):
                wd, mask, cookie, ln = struct.unpack_from("iIII", buf, i)
                hit = hit or buf[i + 16:i + 16 + ln].rstrip(b"\\0").decode() == name
                i += 16 + ln
            if hit: break
        f = os.open(os.path.join(d, name), os.O_WRONLY); os.pwrite(f, b"ZZZZ", 0); os.close(f)
        """

    @Test(.timeLimit(.minutes(3)))
    func bytesWrittenAsTheFileArrivesAreNeverTakenAsComplete() throws {
        // GIVEN a program that writes into a file as soon as it appears at its name
        let server = try FaultServer()
        server.setResource("/arrive.bin", body: TestData.bytes(count: 400_000, seed: 3615))
        let directory = try TemporaryDirectory()
        var accepted: [Int] = []
        var rounds = 0
        for round in 0..<30 {
            let dir = directory.file("r\(round)")
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            let ready = directory.file("ready\(round)")
            let watcher = Process()
            watcher.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            watcher.arguments = ["-c", Self.writerOnArrival, dir, "f", ready]
            try watcher.run()
            defer { if watcher.isRunning { kill(watcher.processIdentifier, SIGKILL) } }
            guard Disk.waitUntil(timeout: 10, { Disk.exists(ready) }) else { continue }
            // WHEN haul downloads the file there, and then the same command runs again
            #expect(try HaulBinary.run(["-q", "-o", dir + "/f", server.url("/arrive.bin")]).status == 0)
            guard Disk.waitUntil(timeout: 5, { !watcher.isRunning }), Disk.bytes(dir + "/f").map({ Array($0.prefix(4)) }) == Array("ZZZZ".utf8) else {
                continue
            }
            rounds += 1
            let again = try HaulBinary.run(["-o", dir + "/f", server.url("/arrive.bin")])
            if again.stderr.contains("already complete") { accepted.append(round) }
        }
        // THEN the other program's bytes are never taken for the finished download
        #expect(rounds >= 10, "only \(rounds) rounds saw the write")
        #expect(accepted.isEmpty, "taken as already complete with the other program's bytes in rounds \(accepted) of \(rounds)")
    }

    @Test func everySpellingOfAFinishedFilesPathIsAlreadyComplete() throws {
        // GIVEN a file haul downloaded into dir/f
        let server = try FaultServer()
        let body = TestData.bytes(count: 40_000, seed: 3607)
        server.setResource("/s.bin", body: body)
        let directory = try TemporaryDirectory()
        let dir = directory.file("dir")
        try FileManager.default.createDirectory(atPath: dir + "/sub", withIntermediateDirectories: true)
        #expect(symlink(dir, directory.file("link")) == 0)
        #expect(try HaulBinary.run(["-q", "-o", dir + "/f", server.url("/s.bin")]).status == 0)
        let requests = server.requests.count
        // WHEN the same request names it otherwise
        for spelling in [dir + "/./f", dir + "/sub/../f", directory.file("link") + "/f", dir + "//f"] {
            let again = try HaulBinary.run(["-o", spelling, server.url("/s.bin")])
            // THEN it is the same file, already complete, with no request
            #expect(again.status == 0 && again.stderr.contains("already complete"), "\(spelling): \(again.stderr)")
        }
        #expect(server.requests.count == requests)
        // AND another range or method of the same URL is not the finished download
        for extra in [["-r", "0-99"], ["-X", "POST"]] {
            let other = try HaulBinary.run(extra + ["-o", dir + "/f", server.url("/s.bin")])
            #expect(other.status == 7 && !other.stderr.contains("already complete"), "\(extra): \(other.stderr)")
        }
        #expect(Disk.difference(dir + "/f", body) == nil)
    }

    @Test func aFileHaulNeverFetchedIsRefusedEvenWithACopiedOrStaleMark() throws {
        // GIVEN a file haul downloaded (a mark), and a file of the same bytes haul never fetched
        let server = try FaultServer()
        let body = TestData.bytes(count: 30_000, seed: 3608)
        server.setResource("/m.bin", body: body)
        let directory = try TemporaryDirectory()
        let genuine = directory.file("genuine.bin")
        #expect(try HaulBinary.run(["-q", "-o", genuine, server.url("/m.bin")]).status == 0)
        let stranger = directory.file("stranger.bin")
        try Disk.write(body, to: stranger)
        // WHEN the genuine mark is copied onto the stranger, or a mark naming the stranger's own
        // identity is planted with a bound before its last change
        let copied = try Marks.run(
            "m = os.getxattr(sys.argv[2], 'user.haul.finished'); os.setxattr(sys.argv[1], 'user.haul.finished', m)", stranger, genuine)
        #expect(copied.status == 0, "\(copied.stderr)")
        let copiedRun = try HaulBinary.run(["-o", stranger, server.url("/m.bin")])
        let planted = try Marks.plant(on: stranger, url: server.url("/m.bin"), bound: "s.st_ctime_ns - 1_000_000_000")
        #expect(planted.status == 0, "\(planted.stderr)")
        let plantedRun = try HaulBinary.run(["-o", stranger, server.url("/m.bin")])
        // THEN neither makes it "already complete": refused as a file in the way
        for (what, run) in [("copied", copiedRun), ("stale", plantedRun)] {
            #expect(run.status == 7 && !run.stderr.contains("already complete"), "\(what): \(run.stderr)")
        }
    }

    @Test
    func aMarkWhoseBoundIsAheadOfTheClockProvesNothing() throws {
        // GIVEN a file haul never fetched, with a mark naming the request and the file's identity
        // and a change-time bound a day ahead (no mark of haul's can be: its bound is the clock
        // when it marked, plus 0.2 ms)
        let server = try FaultServer()
        server.setResource("/p.bin", body: TestData.bytes(count: 30_000, seed: 3609))
        let directory = try TemporaryDirectory()
        let stranger = directory.file("planted.bin")
        try Disk.write(TestData.bytes(count: 30_000, seed: 3610), to: stranger)
        let planted = try Marks.plant(on: stranger, url: server.url("/p.bin"), bound: "time.time_ns() + 86_400_000_000_000")
        #expect(planted.status == 0, "\(planted.stderr)")
        // WHEN the request runs with it as the destination
        let run = try HaulBinary.run(["-o", stranger, server.url("/p.bin")])
        // THEN the other bytes are not taken as the finished download
        #expect(run.status == 7 && !run.stderr.contains("already complete"), "stderr: \(run.stderr)")
    }

    // MARK: a destination held by another download

    @Test(.timeLimit(.minutes(1)))
    func aSecondHaulToAHeldDestinationIsRefusedNamingTheHolderAndTheFirstFinishes() throws {
        // GIVEN haul fetching a 2 MB file slowly into f
        let server = try FaultServer()
        let body = TestData.bytes(count: 2_000_000, seed: 3611)
        server.setResource("/held.bin", body: body)
        server.setPersistentFaults("/held.bin", [.throttle(bytesPerSecond: 800_000)])
        let directory = try TemporaryDirectory()
        let output = directory.file("held.bin")
        let first = try RunningHaul(["-q", "-x", "1", "-o", output, server.url("/held.bin")])
        #expect(Disk.waitUntil(timeout: 10) { Disk.partialBytes(in: directory.path) > 0 })
        // WHEN other runs name the same file, plainly, with -c, with --force, with --json
        for extra in [[], ["-c"], ["--force"], ["--json"]] {
            let second = try HaulBinary.run(extra + ["-o", output, server.url("/held.bin")])
            // THEN each is refused (exit 7), naming the process that holds it
            #expect(second.status == 7, "\(extra): stderr \(second.stderr)")
            let said = second.stderr + String(decoding: second.stdout, as: UTF8.self)
            #expect(said.contains("process \(first.pid)"), "\(extra): \(said)")
        }
        // AND the first finishes bit-exact, nothing lost
        #expect(try first.wait(timeout: 30) == .exited(0), "stderr: \(first.stderr)")
        #expect(Disk.difference(output, body) == nil)
    }

    @Test(.timeLimit(.minutes(2)))
    func aSharedQueueItemWhoseDestinationAnotherRunHoldsWaitsAndCompletes() throws {
        // GIVEN a shared queue (PostgreSQL) with an item to f, and a plain haul run already
        // fetching the same request into f slowly
        let cluster = try PostgresCluster()
        defer { cluster.stop() }
        let state = try cluster.createDatabase("held")
        let server = try FaultServer()
        let body = TestData.bytes(count: 3_000_000, seed: 3614)
        server.setResource("/shared.bin", body: body)
        server.setPersistentFaults("/shared.bin", [.throttle(bytesPerSecond: 600_000)])
        let directory = try TemporaryDirectory()
        let output = directory.file("shared.bin")
        let holder = try RunningHaul(["-q", "-x", "1", "-o", output, server.url("/shared.bin")])
        #expect(Disk.waitUntil(timeout: 10) { Disk.partialBytes(in: directory.path) > 0 })
        let added = try HaulBinary.run(["queue", "add", "--state", state, "-o", output, server.url("/shared.bin")])
        #expect(added.status == 0, "stderr: \(added.stderr)")
        // WHEN the queue runs meanwhile
        let run = try HaulBinary.run(["queue", "run", "--state", state, "-q"], timeout: 90)
        // THEN the holder finishes untouched, and the item waits for it, then completes (the
        // same request: already complete), never failed for good
        #expect(try holder.wait(timeout: 30) == .exited(0), "holder stderr: \(holder.stderr)")
        #expect(run.status == 0, "queue run stderr: \(run.stderr)")
        let list = try HaulBinary.run(["queue", "list", "--state", state])
        #expect(list.stdoutString.contains("completed"), "\(list.stdoutString)")
        #expect(Disk.difference(output, body) == nil)
    }
}

/// CPU and wakeups of a process (all its threads), from /proc.
struct ProcessFigures {
    var contextSwitches = 0
    var cpuTicks = 0

    static func of(_ pid: Int32) -> ProcessFigures {
        var figures = ProcessFigures()
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for task in tasks {
            let status = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)) ?? ""
            for line in status.split(separator: "\n") where line.contains("ctxt_switches:") {
                figures.contextSwitches += Int(line.split(separator: "\t").last.map(String.init) ?? "") ?? 0
            }
        }
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        if let close = stat.lastIndex(of: ")") {
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            // utime and stime: fields 14 and 15 of the line, 12 and 13 after the name.
            if fields.count > 12 { figures.cpuTicks = (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0) }
        }
        return figures
    }
}

/// Finished marks written by hand, as another program could.
enum Marks {
    static func run(_ python: String, _ arguments: String...) throws -> ProcessResult {
        try ProcessRunner.run("/usr/bin/python3", ["-c", "import hashlib, os, sys, time; " + python] + arguments, timeout: 10)
    }

    /// Plants on `path` a mark naming a GET of `url` and the file's identity now, with the change
    /// time bound `bound` (a Python expression over `s`, the file's stat).
    static func plant(on path: String, url: String, bound: String) throws -> ProcessResult {
        try run(
            "p = sys.argv[1]; key = hashlib.sha256(('GET\\n\\n' + sys.argv[2]).encode()).hexdigest(); s = os.stat(p); "
                + "m = ' '.join(['haul-finished-2', key, str(s.st_dev), str(s.st_ino), str(s.st_size), str(s.st_mtime_ns // 10**9), str(s.st_mtime_ns % 10**9), str(\(bound))]); "
                + "os.setxattr(p, 'user.haul.finished', m.encode())", path, url)
    }
}
