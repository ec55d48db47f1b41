import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A hostile review of `haul.removeWithFiles` and `haul.move`: calls that race each other, path
/// tricks, a crash in the middle of a move. Each test names the behaviour expected.
@Suite("haul serve: haul.removeWithFiles and haul.move under attack")
struct CLIServeFilesAttackTests {
    static let size = 3 << 20

    /// The files in `directory` (recursively, as paths relative to it), the lock file left out.
    static func files(in directory: String) -> [String] {
        let all = (FileManager.default.enumerator(atPath: directory)?.allObjects as? [String]) ?? []
        return all.filter { path in
            var info = stat()
            return lstat(directory + "/" + path, &info) == 0 && info.st_mode & S_IFMT != S_IFDIR && !path.hasSuffix(".haul-lock")
        }.sorted()
    }

    /// Sends each of `calls` (a method and its parameters, the token put first) to `serve` at
    /// once, one thread each, and returns their parsed replies in order.
    static func atOnce(_ serve: ServeProcess, _ calls: [(String, [Any])]) throws -> [[String: Any]] {
        let bodies = try calls.map { method, params in
            let body: [String: Any] = ["jsonrpc": "2.0", "id": "t", "method": method, "params": ["token:" + serve.secret] + params]
            return String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
        }
        let url = serve.base + "/jsonrpc"
        let replies = ReplyBox(count: calls.count)
        DispatchQueue.concurrentPerform(iterations: bodies.count) { index in
            let reply = try? Curl.run(["-s", "--data-binary", bodies[index], url])
            let object = reply.flatMap { try? JSONSerialization.jsonObject(with: Data($0.stdout)) as? [String: Any] }
            replies.set(index, object ?? ["error": ["message": "no reply: \(reply?.stdoutString ?? "-")"]])
        }
        return replies.all
    }

    final class ReplyBox: @unchecked Sendable {
        // Guarded by `lock`: written from the threads of `concurrentPerform`, read after it returns.
        private let lock = NSLock()
        private var replies: [[String: Any]]
        init(count: Int) { replies = Array(repeating: [:], count: count) }
        func set(_ index: Int, _ reply: [String: Any]) { lock.withLock { replies[index] = reply } }
        var all: [[String: Any]] { lock.withLock { replies } }
    }

    @Test(.timeLimit(.minutes(3)))
    func concurrentMovesOfOneRunningDownloadLeaveItsPartialWithItAndEndBitExactWithNothingOrphaned() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-move-race")
        let nginx = try ServedFiles.start(in: work, [("slow.bin", Self.size, 11)], limitRate: "512k")
        defer { nginx.stop() }
        let dl = work.file("dl")
        let serve = try ServeProcess(state: work.file("state"), directory: dl)
        defer { _ = try? serve.stop() }
        // GIVEN a download a fifth of the way through
        let gid = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/limited/slow.bin"], ["out": "start.bin"]]) as? String)
        #expect(Disk.waitUntil(timeout: 30) { CLIServeFilesTests.completed(serve, gid) > Int64(Self.size / 5) })
        // WHEN eight clients move it at once, each to a name of its own
        let replies = try Self.atOnce(serve, (0..<8).map { index in ("haul.move", [gid, ["out": "moved-\(index).bin"]]) })
        // THEN it ends complete, bit-exact, at the place its status names
        #expect(
            CLIServeFilesTests.settled(serve, gid) == "complete",
            "\(String(describing: try? serve.result("aria2.tellStatus", [gid, ["errorMessage"]]))); replies: \(replies)")
        let status = try serve.result("aria2.tellStatus", [gid, ["files"]]) as? [String: Any]
        let path = try #require(CLIServeFilesTests.entries(status?["files"]).first?["path"] as? String)
        #expect(Disk.difference(path, TestData.bytes(count: Self.size, seed: 11)) == nil, "replies: \(replies)")
        // AND that place is the one the last successful move reported
        let succeeded = replies.compactMap { $0["result"] as? [String: Any] }
        #expect(!succeeded.isEmpty, "\(replies)")
        // AND no partial or other file of it is left anywhere else (no move "succeeded" without its files)
        #expect(Self.files(in: dl) == [(path as NSString).lastPathComponent], "\(Self.files(in: dl)); replies: \(replies)")
    }

    @Test(.timeLimit(.minutes(3)))
    func aRemovalWithFilesRacingAMoveDeletesThePartialWhereverTheMoveLeftIt() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-rm-move-race")
        let nginx = try ServedFiles.start(in: work, [("slow.bin", Self.size, 12)], limitRate: "512k")
        defer { nginx.stop() }
        let dl = work.file("dl")
        let serve = try ServeProcess(state: work.file("state"), directory: dl)
        defer { _ = try? serve.stop() }
        // GIVEN a download a fifth of the way through
        let gid = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/limited/slow.bin"], ["out": "start.bin"]]) as? String)
        #expect(Disk.waitUntil(timeout: 30) { CLIServeFilesTests.completed(serve, gid) > Int64(Self.size / 5) })
        // WHEN it is moved and removed with its files at the same time
        let replies = try Self.atOnce(serve, [("haul.move", [gid, ["dir": "elsewhere", "out": "moved.bin"]]), ("haul.removeWithFiles", [gid])])
        let removed = replies[1]["result"] != nil
        // THEN a removal that succeeded left nothing of the download on disk, and the download is gone
        if removed {
            usleep(500_000)
            #expect(Self.files(in: dl).isEmpty, "\(Self.files(in: dl)); replies: \(replies)")
            #expect(CLIServeFilesTests.error(try serve.call("aria2.tellStatus", [gid])).contains("not found"))
        } else {
            // AND a refused one left the download in the queue, with its files where its status says
            let status = try serve.result("aria2.tellStatus", [gid, ["status"]]) as? [String: Any]
            #expect(status?["status"] as? String != nil, "\(replies)")
        }
    }

    @Test(.timeLimit(.minutes(2)))
    func aDirLeadingOutThroughASymlinkToTheRootsUnicodeTwinIsRefused() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-move-nfd")
        let nginx = try ServedFiles.start(in: work, [("done.bin", 40_000, 13)], limitRate: "1m")
        defer { nginx.stop() }
        // GIVEN a root whose name has an accented letter (NFC), and beside it, outside, its twin
        // spelled with a combining accent (NFD): another directory the file system tells apart
        let dl = work.file("t\u{E9}l\u{E9}chargements")
        let twin = work.file("te\u{301}le\u{301}chargements")
        try FileManager.default.createDirectory(atPath: twin, withIntermediateDirectories: true)
        let serve = try ServeProcess(state: work.file("state"), directory: dl)
        defer { _ = try? serve.stop() }
        let gid = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/done.bin"]]) as? String)
        #expect(CLIServeFilesTests.settled(serve, gid) == "complete")
        // AND a symlink inside the root that leads to the twin
        #expect(symlink(twin, dl + "/esc") == 0)
        // WHEN the download is moved through it, and another is added through it
        let move = try serve.call("haul.move", [gid, ["dir": "esc"]])
        let add = try serve.call("aria2.addUri", [[nginx.baseURL + "/done.bin"], ["dir": "esc", "out": "added.bin"]])
        // THEN both are refused as leading outside the root, and nothing lands in the twin
        #expect(CLIServeFilesTests.error(move).contains("outside"), "\(move)")
        #expect(CLIServeFilesTests.error(add).contains("outside"), "\(add)")
        usleep(300_000)
        #expect(Self.files(in: twin).isEmpty, "\(Self.files(in: twin))")
        #expect(Disk.difference(dl + "/done.bin", TestData.bytes(count: 40_000, seed: 13)) == nil)
    }

    /// Holds SQLite's write lock on the store in `state` (another process, `sqlite3`) until
    /// `release`, so the server's next write waits (its busy timeout) in the middle of what it does.
    final class StoreWriteLock {
        let process = Process()
        let input = Pipe()

        init(state: String) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
            process.arguments = [state + "/haul.sqlite"]
            process.standardInput = input
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            input.fileHandleForWriting.write(Data("BEGIN IMMEDIATE;\nSELECT 1;\n".utf8))
        }

        func release() {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
        }

        deinit {
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
    }

    @Test(.timeLimit(.minutes(2)))
    func aCrashBetweenAMovesRenameAndItsRecordLeavesTheDownloadFoundCompleteAtItsFile() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-move-crash")
        let nginx = try ServedFiles.start(in: work, [("done.bin", 60_000, 14)], limitRate: "1m")
        defer { nginx.stop() }
        let dl = work.file("dl")
        let serve = try ServeProcess(state: work.file("state"), directory: dl)
        defer { _ = try? serve.stop() }
        let gid = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/done.bin"]]) as? String)
        #expect(CLIServeFilesTests.settled(serve, gid) == "complete")
        // GIVEN the store's write lock held by another process, so the move's first write (its
        // intent, before any new name) waits
        let held = try StoreWriteLock(state: work.file("state"))
        defer { held.release() }
        usleep(200_000)
        // WHEN a move is under way and haul serve is killed (-9) while it waits
        let body = #"{"jsonrpc":"2.0","id":1,"method":"haul.move","params":["token:\#(serve.secret)","\#(gid)",{"dir":"sub","out":"moved.bin"}]}"#
        let url = serve.base + "/jsonrpc"
        let call = Thread { _ = try? Curl.run(["-s", "--data-binary", body, url]) }
        call.start()
        let renamed = Disk.waitUntil(timeout: 2) { Disk.exists(dl + "/sub/moved.bin") }
        serve.running.send(SIGKILL)
        _ = try? serve.running.wait(timeout: 10)
        held.release()
        // THEN once started again on the same state, the download is found complete, and the path
        // its status names holds its file, bit-exact
        let again = try ServeProcess(state: work.file("state"), directory: dl)
        defer { _ = try? again.stop() }
        let status = try again.result("aria2.tellStatus", [gid, ["status", "files"]]) as? [String: Any]
        let path = CLIServeFilesTests.entries(status?["files"]).first?["path"] as? String ?? "-"
        #expect(status?["status"] as? String == "complete", "\(String(describing: status))")
        #expect(
            Disk.difference(path, TestData.bytes(count: 60_000, seed: 14)) == nil,
            "renamed before the kill: \(renamed); status: \(String(describing: status)); files: \(Self.files(in: dl))")
        // AND no new name was made before the move's intent was in the store, and its file is the
        // only one in the root
        #expect(!renamed)
        #expect(Self.files(in: dl) == [String(path.dropFirst(dl.count + 1))], "\(Self.files(in: dl))")
    }

    @Test(.timeLimit(.minutes(3)))
    func aMoveOntoTheNameAnotherQueuedDownloadWillWriteIsRefusedAndBothEndBitExact() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-move-collide")
        let nginx = try ServedFiles.start(in: work, [("a.bin", Self.size, 15), ("b.bin", 200_000, 16)], limitRate: "512k")
        defer { nginx.stop() }
        let dl = work.file("dl")
        let serve = try ServeProcess(state: work.file("state"), directory: dl)
        defer { _ = try? serve.stop() }
        // GIVEN a download paused a fifth of the way through, and another added paused to taken.bin (no file yet)
        let a = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/limited/a.bin"], ["out": "a.bin"]]) as? String)
        #expect(Disk.waitUntil(timeout: 30) { CLIServeFilesTests.completed(serve, a) > Int64(Self.size / 5) })
        #expect(try serve.result("aria2.pause", [a]) as? String == a)
        let b = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/b.bin"], ["out": "taken.bin", "pause": "true"]]) as? String)
        // WHEN the first is moved onto the name the second will write
        let reply = try serve.call("haul.move", [a, ["out": "taken.bin"]])
        // THEN the move is refused, naming the other download
        #expect(CLIServeFilesTests.error(reply).contains("taken.bin"), "\(reply)")
        // AND once both run, each ends complete and bit-exact at its own path
        #expect(try serve.result("aria2.unpause", [b]) as? String == b)
        #expect(CLIServeFilesTests.settled(serve, b) == "complete")
        #expect(try serve.result("aria2.unpause", [a]) as? String == a)
        let ended = CLIServeFilesTests.settled(serve, a)
        #expect(ended == "complete", "\(String(describing: try? serve.result("aria2.tellStatus", [a, ["errorMessage", "files"]])))")
        for (gid, seed, size) in [(a, UInt64(15), Self.size), (b, UInt64(16), 200_000)] {
            let status = try serve.result("aria2.tellStatus", [gid, ["files"]]) as? [String: Any]
            let path = CLIServeFilesTests.entries(status?["files"]).first?["path"] as? String ?? "-"
            #expect(Disk.difference(path, TestData.bytes(count: size, seed: seed)) == nil, "\(gid): \(path)")
        }
    }

    /// Was open (issue 39): a crash between a move's link and the store's record left the partial
    /// with a second name; unpaused after the restart it ended in error ("has 2 hard links").
    @Test(.timeLimit(.minutes(3)))
    func aCrashInTheMiddleOfMovingAPausedDownloadLeavesItToContinueBitExactWithNoPartialNameLeftBehind() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-move-crash-partial")
        let nginx = try ServedFiles.start(in: work, [("slow.bin", Self.size, 17)], limitRate: "512k")
        defer { nginx.stop() }
        let dl = work.file("dl")
        // GIVEN a server that dies (as by kill -9) once a move gave a file its new name
        let serve = try ServeProcess(
            state: work.file("state"), directory: dl, environment: CLIServeMoveCrashTests.crashing(at: "after-move-link:1"))
        defer { _ = try? serve.stop() }
        // AND a download paused a third of the way through
        let gid = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/limited/slow.bin"], ["out": "first.bin"]]) as? String)
        #expect(Disk.waitUntil(timeout: 30) { CLIServeFilesTests.completed(serve, gid) > Int64(Self.size / 3) })
        #expect(try serve.result("aria2.pause", [gid]) as? String == gid)
        #expect(Disk.waitUntil(timeout: 10) { (try? serve.result("aria2.tellStatus", [gid, ["status"]]) as? [String: Any])?["status"] as? String == "paused" })
        // WHEN it is moved, and haul serve dies once the partial has its new name
        _ = try? serve.call("haul.move", [gid, ["dir": "sub", "out": "second.bin"]])
        #expect(try serve.running.wait(timeout: 20) == .signalled(SIGKILL))
        let renamed = Disk.exists(dl + "/sub/second.bin.haul-partial") && Disk.exists(dl + "/first.bin.haul-partial")
        #expect(renamed, "the partial had its two names at the crash: \(Self.files(in: dl))")
        // THEN started again and unpaused, it ends complete and bit-exact where its status says
        let again = try ServeProcess(state: work.file("state"), directory: dl)
        defer { _ = try? again.stop() }
        #expect(try again.result("aria2.unpause", [gid]) as? String == gid)
        let ended = CLIServeFilesTests.settled(again, gid)
        #expect(ended == "complete", "\(String(describing: try? again.result("aria2.tellStatus", [gid, ["errorMessage"]])))")
        let status = try again.result("aria2.tellStatus", [gid, ["files"]]) as? [String: Any]
        let path = CLIServeFilesTests.entries(status?["files"]).first?["path"] as? String ?? "-"
        #expect(Disk.difference(path, TestData.bytes(count: Self.size, seed: 17)) == nil, "renamed before the kill: \(renamed)")
        // AND continued rather than started again
        let served = nginx.accessLog().filter { $0.uri.hasSuffix("slow.bin") }.reduce(Int64(0)) { $0 + Int64($1.bodyBytesSent) }
        #expect(served < Int64(Self.size) + Int64(Self.size) / 2, "served \(served)")
        // AND nothing but its file is left: no partial's name, at the old place or the new
        #expect(Self.files(in: dl) == [String(path.dropFirst(dl.count + 1))], "\(Self.files(in: dl))")
    }

    /// The scene of the symlink-swap races: a `haul serve` whose root `dl` holds a directory
    /// `sub`, a directory `outside` the root, and a complete download of `file` in `dl`.
    struct SwapScene {
        let work: TemporaryDirectory
        let nginx: NginxServer
        let serve: ServeProcess
        let gid: String
        var dl: String { work.file("dl") }
        var outside: String { work.file("outside") }

        init(prefix: String, _ file: (name: String, size: Int, seed: UInt64), limitRate: String) throws {
            let work = try TemporaryDirectory(prefix: prefix)
            let nginx = try ServedFiles.start(in: work, [file], limitRate: limitRate)
            do {
                try FileManager.default.createDirectory(atPath: work.file("outside"), withIntermediateDirectories: true)
                try FileManager.default.createDirectory(atPath: work.file("dl/sub"), withIntermediateDirectories: true)
                let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
                do {
                    gid = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/" + file.name]]) as? String)
                    #expect(CLIServeFilesTests.settled(serve, gid) == "complete")
                } catch {
                    _ = try? serve.stop()
                    throw error
                }
                self.serve = serve
            } catch {
                nginx.stop()
                throw error
            }
            self.work = work
            self.nginx = nginx
        }

        /// Stops the server and nginx.
        func stop() {
            _ = try? serve.stop()
            nginx.stop()
        }
    }

    @Test(.timeLimit(.minutes(2)))
    func aParentSwappedForASymlinkBetweenTheCheckAndTheMoveNeverPutsAFileOutsideTheRoot() throws {
        let scene = try SwapScene(prefix: "haul-serve-move-swap", ("done.bin", 50_000, 18), limitRate: "1m")
        defer { scene.stop() }
        let (dl, outside, serve, gid) = (scene.dl, scene.outside, scene.serve, scene.gid)
        // GIVEN a hostile process swapping dl/sub for a symlink out of the root, over and over
        let flipper = SymlinkFlipper(directory: dl, outside: outside)
        // WHEN the download is moved into dl/sub and back again and again, for 10 s, and longer
        // (60 s at most) until it went in three times: a loaded machine gets few moves past the flips
        let deadline = Date().addingTimeInterval(10)
        let lastChance = Date().addingTimeInterval(60)
        var moves = 0
        while Date() < deadline || (moves < 3 && Date() < lastChance), Self.files(in: outside).isEmpty {
            if (try? serve.result("haul.move", [gid, ["dir": "sub", "out": "in-\(moves).bin"]])) != nil { moves += 1 }
            _ = try? serve.result("haul.move", [gid, ["dir": dl, "out": "back.bin"]])
        }
        flipper.stop()
        // THEN moves went through meanwhile (refused only while dl/sub was the symlink), and
        // nothing ever landed outside the root
        #expect(moves >= 2, "\(moves)")
        #expect(Self.files(in: outside).isEmpty, "after \(moves) moves into dl/sub: \(Self.files(in: outside))")
        // AND the download's file is whole where its status says
        let status = try serve.result("aria2.tellStatus", [gid, ["files"]]) as? [String: Any]
        let path = CLIServeFilesTests.entries(status?["files"]).first?["path"] as? String ?? "-"
        #expect(Disk.difference(path, TestData.bytes(count: 50_000, seed: 18)) == nil, "\(path)")
    }

    @Test(.timeLimit(.minutes(2)))
    func aParentSwappedForASymlinkNeverLeadsAMovesLockFileOutsideTheRoot() throws {
        let scene = try SwapScene(prefix: "haul-serve-move-swap-lock", ("done.bin", 30_000, 20), limitRate: "10m")
        defer { scene.stop() }
        let (dl, outside, serve, gid) = (scene.dl, scene.outside, scene.serve, scene.gid)
        // GIVEN a hostile process swapping dl/sub for a symlink out of the root, over and over
        let flipper = SymlinkFlipper(directory: dl, outside: outside)
        // WHEN the download is moved into dl/sub and back again and again, for a few seconds
        func outsideNames() -> [String] { (try? FileManager.default.contentsOfDirectory(atPath: outside)) ?? [] }
        let deadline = Date().addingTimeInterval(10)
        var moves = 0
        while Date() < deadline, outsideNames().isEmpty {
            if (try? serve.result("haul.move", [gid, ["dir": "sub", "out": "in-\(moves).bin"]])) != nil { moves += 1 }
            _ = try? serve.result("haul.move", [gid, ["dir": dl, "out": "back.bin"]])
        }
        flipper.stop()
        // THEN moves went through meanwhile, and no file at all, the destination's lock file
        // included, was ever made outside the root (a lock there locks nothing the root's runs see)
        #expect(moves >= 1, "\(moves)")
        #expect(outsideNames().isEmpty, "after \(moves) moves into dl/sub: \(outsideNames())")
    }

    @Test(.timeLimit(.minutes(3)))
    func aParentSwappedForASymlinkDuringARemovalWithFilesNeverDeletesAFileOutsideTheRoot() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-rm-swap")
        let nginx = try ServedFiles.start(in: work, [("f.bin", 20_000, 19)], limitRate: "10m")
        defer { nginx.stop() }
        let dl = work.file("dl")
        let outside = work.file("outside")
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dl + "/sub", withIntermediateDirectories: true)
        // GIVEN a precious file outside the root under the name the downloads below take
        try Disk.write([7, 7, 7], to: outside + "/f.bin")
        let serve = try ServeProcess(state: work.file("state"), directory: dl)
        defer { _ = try? serve.stop() }
        // AND a hostile process swapping dl/sub for a symlink to that directory, over and over
        let flipper = SymlinkFlipper(directory: dl, outside: outside)
        defer { flipper.stop() }
        var attempts = 0
        while attempts < 60, Disk.exists(outside + "/f.bin") {
            attempts += 1
            // WHEN a download finished at dl/sub/f.bin is removed with its files while dl/sub flips
            flipper.hold(true)
            let gid = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/f.bin"], ["dir": "sub", "out": "f.bin"]]) as? String)
            #expect(CLIServeFilesTests.settled(serve, gid) == "complete")
            flipper.hold(false)
            _ = try serve.call("haul.removeWithFiles", [gid])
            flipper.hold(true)
            if Disk.exists(dl + "/sub/f.bin") { _ = try? serve.call("haul.removeWithFiles", [gid]) }
            // (this test's own cleanup only while dl/sub is the real directory)
            var info = stat()
            if lstat(dl + "/sub", &info) == 0, info.st_mode & S_IFMT == S_IFDIR { unlink(dl + "/sub/f.bin") }
        }
        // THEN the file outside the root is never deleted
        #expect(Disk.difference(outside + "/f.bin", [7, 7, 7]) == nil, "after \(attempts) removals")
    }

    @Test(.timeLimit(.minutes(3)))
    func aRemovalWithFilesRacingADownloadsCompletionLeavesNothingOfItBehind() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-rm-finish")
        let nginx = try ServedFiles.start(in: work, [("f.bin", 120_000, 20)], limitRate: "1m")
        defer { nginx.stop() }
        let dl = work.file("dl")
        let serve = try ServeProcess(state: work.file("state"), directory: dl)
        defer { _ = try? serve.stop() }
        var outcomes: [String] = []
        for round in 0..<16 {
            // GIVEN a download about to finish (120 kB at 1 MB/s)
            let gid = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/limited/f.bin"], ["out": "f\(round).bin"]]) as? String)
            usleep(useconds_t(60_000 + round * 5_000))
            // WHEN it is removed with its files as it completes (the partial renamed into place meanwhile)
            let reply = try serve.call("haul.removeWithFiles", [gid])
            outcomes.append("\(round): \(reply["result"] != nil ? "removed" : CLIServeFilesTests.error(reply))")
            // THEN once removed, nothing of it is left: no partial, no finished file, no sidecar
            if reply["result"] != nil {
                usleep(200_000)
                let left = Self.files(in: dl).filter { $0.hasPrefix("f\(round).bin") }
                #expect(left.isEmpty, "round \(round): \(left); \(reply)")
                #expect(CLIServeFilesTests.error(try serve.call("aria2.tellStatus", [gid])).contains("not found"))
            }
        }
        // AND each removal succeeded
        #expect(outcomes.allSatisfy { $0.hasSuffix("removed") }, "\(outcomes)")
    }

    @Test(.timeLimit(.minutes(3)))
    func movesOnAFullDiskLoseNothingAndAPausedOneFinishesBitExactOnceThereIsRoom() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-move-full")
        let nginx = try ServedFiles.start(in: work, [("done.bin", 1 << 20, 21), ("slow.bin", 2 << 20, 22)], limitRate: "256k")
        defer { nginx.stop() }
        let disk = try SmallFileSystem(sizeBytes: 6 << 20)
        defer { disk.unmount() }
        let dl = disk.path + "/dl"
        let serve = try ServeProcess(state: work.file("state"), directory: dl)
        defer { _ = try? serve.stop() }
        // GIVEN a complete download and one paused partway, on a small file system
        let done = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/done.bin"], ["out": "done.bin"]]) as? String)
        #expect(CLIServeFilesTests.settled(serve, done) == "complete")
        let paused = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/limited/slow.bin"], ["out": "slow.bin"]]) as? String)
        #expect(Disk.waitUntil(timeout: 30) { CLIServeFilesTests.completed(serve, paused) > 300_000 })
        #expect(try serve.result("aria2.pause", [paused]) as? String == paused)
        #expect(
            Disk.waitUntil(timeout: 10) { (try? serve.result("aria2.tellStatus", [paused, ["status"]]) as? [String: Any])?["status"] as? String == "paused" })
        // AND the file system then filled to the last byte
        let filler = disk.path + "/filler"
        let fd = open(filler, O_WRONLY | O_CREAT, 0o600)
        let block = [UInt8](repeating: 0, count: 64 << 10)
        while write(fd, block, block.count) > 0 {}
        close(fd)
        // WHEN both are moved into directories that do not exist yet
        let movedDone = try serve.call("haul.move", [done, ["dir": "a/b", "out": "moved.bin"]])
        let movedPaused = try serve.call("haul.move", [paused, ["dir": "c/d", "out": "moved.bin"]])
        // THEN each either moved or was refused with a reason, and the complete one is whole where its status says
        for reply in [movedDone, movedPaused] { #expect(reply["result"] != nil || !CLIServeFilesTests.error(reply).isEmpty, "\(reply)") }
        let status = try serve.result("aria2.tellStatus", [done, ["status", "files"]]) as? [String: Any]
        let path = CLIServeFilesTests.entries(status?["files"]).first?["path"] as? String ?? "-"
        #expect(Disk.difference(path, TestData.bytes(count: 1 << 20, seed: 21)) == nil, "\(movedDone)")
        // AND once there is room again, the paused one finishes bit-exact where its status says
        unlink(filler)
        #expect(try serve.result("aria2.unpause", [paused]) as? String == paused)
        #expect(CLIServeFilesTests.settled(serve, paused) == "complete", "\(movedPaused)")
        let pausedStatus = try serve.result("aria2.tellStatus", [paused, ["files"]]) as? [String: Any]
        let pausedPath = CLIServeFilesTests.entries(pausedStatus?["files"]).first?["path"] as? String ?? "-"
        #expect(Disk.difference(pausedPath, TestData.bytes(count: 2 << 20, seed: 22)) == nil, "\(movedPaused)")
    }

    @Test(.timeLimit(.minutes(2)))
    func aMoveToTheUnicodeTwinOfItsNameIsAMoveNotAlreadyThere() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-move-twin")
        let nginx = try ServedFiles.start(in: work, [("done.bin", 30_000, 23)], limitRate: "1m")
        defer { nginx.stop() }
        let dl = work.file("dl")
        let serve = try ServeProcess(state: work.file("state"), directory: dl)
        defer { _ = try? serve.stop() }
        // GIVEN a complete download named with a precomposed accent (NFC)
        let gid = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/done.bin"], ["out": "caf\u{E9}.bin"]]) as? String)
        #expect(CLIServeFilesTests.settled(serve, gid) == "complete")
        // WHEN it is moved to the same name spelled with a combining accent (NFD), another name on Linux
        let reply = try serve.call("haul.move", [gid, ["out": "cafe\u{301}.bin"]])
        // THEN it moves: the file is under the new bytes, and the old name is gone
        #expect(reply["result"] != nil, "\(reply)")
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: dl)) ?? []).filter { !$0.hasSuffix(".haul-lock") }
        #expect(names.map { Array($0.utf8) } == [Array("cafe\u{301}.bin".utf8)], "\(names.map { Array($0.utf8) })")
    }
}
