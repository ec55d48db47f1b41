import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `haul.removeWithFiles` and `haul.move` driven as a client would: raw JSON-RPC over HTTP to a
/// real `haul serve`, real files from nginx, and files swapped under the download's names by hand.
@Suite("haul serve: haul.removeWithFiles and haul.move against real files")
struct CLIServeFilesTests {
    static let size = 3 << 20

    /// The state of `gid` once it is not waiting nor active, within `timeout` seconds.
    static func settled(_ serve: ServeProcess, _ gid: String, timeout: Double = 60) -> String? {
        var last: String?
        _ = Disk.waitUntil(timeout: timeout) {
            last = (try? serve.result("aria2.tellStatus", [gid, ["status"]]) as? [String: Any])?["status"] as? String
            return last == "complete" || last == "error" || last == "removed"
        }
        return last
    }

    static func completed(_ serve: ServeProcess, _ gid: String) -> Int64 {
        let status = try? serve.result("aria2.tellStatus", [gid, ["completedLength"]]) as? [String: Any]
        return Int64(status?["completedLength"] as? String ?? "") ?? -1
    }

    static func error(_ reply: [String: Any]) -> String {
        ((reply["error"] as? [String: Any])?["message"] as? String) ?? "no error: \(reply)"
    }

    /// Replaces the file at `path` with a copy of itself: the same name and bytes, another inode.
    static func swapForCopy(_ path: String) throws {
        let copy = path + ".copy"
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        guard rename(copy, path) == 0 else { throw TestSupportError("cannot swap \(path)") }
    }

    static func entries(_ list: Any?) -> [[String: Any]] { list as? [[String: Any]] ?? [] }

    @Test(.timeLimit(.minutes(2)))
    func removalDeletesExactlyTheTasksFilesAndKeepsAFileSwappedInUnderTheSameName() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-rmfiles")
        let nginx = try ServedFiles.start(in: work, [("a.bin", 40_000, 1), ("b.bin", 40_000, 2), ("slow.bin", Self.size, 3)], limitRate: "256k")
        defer { nginx.stop() }
        let dl = work.file("dl")
        let serve = try ServeProcess(state: work.file("state"), directory: dl)
        defer { _ = try? serve.stop() }

        // GIVEN two finished downloads; the file of the second is then replaced by a copy of itself
        let a = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/a.bin"]]) as? String)
        let b = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/b.bin"]]) as? String)
        #expect(Self.settled(serve, a) == "complete" && Self.settled(serve, b) == "complete")
        usleep(20_000)
        try Self.swapForCopy(dl + "/b.bin")
        // WHEN each is removed with its files
        let removedA = try #require(try serve.result("haul.removeWithFiles", [a]) as? [String: Any])
        let removedB = try #require(try serve.result("haul.removeWithFiles", [b]) as? [String: Any])
        // THEN the first's file is deleted and reported; the swapped one is kept, with the reason
        #expect(!Disk.exists(dl + "/a.bin"))
        #expect(Self.entries(removedA["deleted"]).contains { $0["role"] as? String == "file" && $0["path"] as? String == dl + "/a.bin" }, "\(removedA)")
        #expect(Disk.difference(dl + "/b.bin", TestData.bytes(count: 40_000, seed: 2)) == nil)
        let keptB = Self.entries(removedB["kept"])
        #expect(
            keptB.count == 1 && keptB.first?["path"] as? String == dl + "/b.bin" && (keptB.first?["reason"] as? String ?? "").contains("not the file"),
            "\(removedB)")
        #expect(Self.entries(removedB["deleted"]).allSatisfy { $0["role"] as? String != "file" })
        // AND both left the queue
        #expect(Self.error(try serve.call("aria2.tellStatus", [a])).contains("not found"))
        #expect(Self.error(try serve.call("aria2.tellStatus", [b])).contains("not found"))

        // GIVEN two downloads under way (slowly); the partial of the second is swapped for a copy
        let running = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/limited/slow.bin"], ["out": "one.bin"]]) as? String)
        let swapped = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/limited/slow.bin"], ["out": "two.bin"]]) as? String)
        #expect(Disk.waitUntil(timeout: 20) { Self.completed(serve, running) > 200_000 && Self.completed(serve, swapped) > 200_000 })
        #expect(try serve.result("aria2.pause", [swapped]) as? String == swapped)
        try Self.swapForCopy(dl + "/two.bin.haul-partial")
        // WHEN the running one is removed with its files
        let removedRunning = try #require(try serve.result("haul.removeWithFiles", [running]) as? [String: Any])
        // THEN it was stopped, and its partial deleted
        #expect(!Disk.exists(dl + "/one.bin.haul-partial") && !Disk.exists(dl + "/one.bin"))
        let roles = Self.entries(removedRunning["deleted"]).compactMap { $0["role"] as? String }
        #expect(roles.contains("partial") && roles.contains("resume-record"), "\(removedRunning)")
        #expect(Self.entries(removedRunning["kept"]).isEmpty, "\(removedRunning)")
        // AND the paused one, whose partial is another file now, is not moved (it is not its partial)
        let refusedMove = try serve.call("haul.move", [swapped, ["out": "three.bin"]])
        #expect(Self.error(refusedMove).contains("not this download's partial"), "\(refusedMove)")
        #expect(Disk.exists(dl + "/two.bin.haul-partial") && !Disk.exists(dl + "/three.bin.haul-partial"))
        // WHEN it is removed with its files
        let removedSwapped = try #require(try serve.result("haul.removeWithFiles", [swapped]) as? [String: Any])
        // THEN the file under its partial's name is kept and reported
        #expect(Disk.exists(dl + "/two.bin.haul-partial"))
        let kept = Self.entries(removedSwapped["kept"])
        #expect(kept.contains { $0["role"] as? String == "partial" && ($0["reason"] as? String ?? "").contains("another file") }, "\(removedSwapped)")
        #expect(Self.entries(removedSwapped["deleted"]).allSatisfy { $0["role"] as? String != "partial" })
    }

    @Test(.timeLimit(.minutes(2)))
    func aDryRunListsWhatARemovalWouldDeleteAndKeepAndChangesNothing() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-rmdry")
        let nginx = try ServedFiles.start(in: work, [("a.bin", 40_000, 5), ("b.bin", 40_000, 6)], limitRate: "10m")
        defer { nginx.stop() }
        let dl = work.file("dl")
        let serve = try ServeProcess(state: work.file("state"), directory: dl)
        defer { _ = try? serve.stop() }
        // GIVEN two finished downloads, the file of the second replaced by a copy of itself
        let a = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/a.bin"]]) as? String)
        let b = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/b.bin"]]) as? String)
        #expect(Self.settled(serve, a) == "complete" && Self.settled(serve, b) == "complete")
        usleep(20_000)
        try Self.swapForCopy(dl + "/b.bin")
        // WHEN each is removed with {dryRun: true}
        let wouldA = try #require(try serve.result("haul.removeWithFiles", [a, ["dryRun": true]]) as? [String: Any])
        let wouldB = try #require(try serve.result("haul.removeWithFiles", [b, ["dryRun": true]]) as? [String: Any])
        // THEN the answers list the file it would delete, and the swapped one it would keep with the reason
        #expect(Self.entries(wouldA["deleted"]).contains { $0["role"] as? String == "file" && $0["path"] as? String == dl + "/a.bin" }, "\(wouldA)")
        #expect(Self.entries(wouldA["kept"]).isEmpty, "\(wouldA)")
        #expect(Self.entries(wouldB["deleted"]).allSatisfy { $0["role"] as? String != "file" }, "\(wouldB)")
        #expect(
            Self.entries(wouldB["kept"]).contains { $0["path"] as? String == dl + "/b.bin" && ($0["reason"] as? String ?? "").contains("not the file") },
            "\(wouldB)")
        // AND nothing changed: both files are there and both downloads still complete in the queue
        #expect(Disk.difference(dl + "/a.bin", TestData.bytes(count: 40_000, seed: 5)) == nil)
        #expect(Disk.difference(dl + "/b.bin", TestData.bytes(count: 40_000, seed: 6)) == nil)
        #expect(Self.settled(serve, a, timeout: 1) == "complete" && Self.settled(serve, b, timeout: 1) == "complete")
        // AND the removal itself then does what the dry run said
        let removedA = try #require(try serve.result("haul.removeWithFiles", [a]) as? [String: Any])
        #expect(!Disk.exists(dl + "/a.bin"))
        let deletedPaths = Self.entries(removedA["deleted"]).compactMap { $0["path"] as? String }.sorted()
        let wouldPaths = Self.entries(wouldA["deleted"]).compactMap { $0["path"] as? String }.sorted()
        #expect(deletedPaths == wouldPaths, "\(removedA) vs \(wouldA)")
        // AND a dry run with a bad option is refused as a bad parameter
        let refused = try serve.call("haul.removeWithFiles", [b, ["dryRun": "yes"]])
        #expect(Self.error(refused).contains("dryRun must be true or false"), "\(refused)")
    }

    @Test(.timeLimit(.minutes(2)))
    func removalIsRefusedWhileAnotherProcessHoldsTheDestination() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-rmheld")
        let nginx = try ServedFiles.start(in: work, [("slow.bin", Self.size, 4)], limitRate: "128k")
        defer { nginx.stop() }
        let dl = work.file("dl")
        let serve = try ServeProcess(state: work.file("state"), directory: dl)
        defer { _ = try? serve.stop() }
        // GIVEN a paused download to dl/held.bin, and another haul process downloading to that file
        let gid = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/limited/slow.bin"], ["out": "held.bin", "pause": "true"]]) as? String)
        let other = try RunningHaul(["-o", dl + "/held.bin", nginx.baseURL + "/limited/slow.bin"])
        defer {
            other.send(SIGKILL)
            _ = try? other.wait(timeout: 10)
        }
        #expect(Disk.waitUntil(timeout: 20) { (Disk.size(dl + "/held.bin.haul-partial") ?? 0) > 0 })
        // WHEN it is removed with its files
        let reply = try serve.call("haul.removeWithFiles", [gid])
        // THEN it is refused, saying another process holds the destination, and nothing changed
        let message = Self.error(reply)
        #expect(message.contains("refused") && message.contains("already downloading"), "\(reply)")
        #expect(Disk.exists(dl + "/held.bin.haul-partial"))
        let status = try serve.result("aria2.tellStatus", [gid, ["status"]]) as? [String: Any]
        #expect(status?["status"] as? String == "paused")
        // AND a move is refused the same way, moving nothing
        let move = try serve.call("haul.move", [gid, ["out": "freed.bin"]])
        #expect(Self.error(move).contains("already downloading"), "\(move)")
        #expect(Disk.exists(dl + "/held.bin.haul-partial") && !Disk.exists(dl + "/freed.bin.haul-partial"))
    }

    @Test(.timeLimit(.minutes(3)))
    func aMoveInTheMiddleOfADownloadEndsBitExactAtTheNewPlaceWithNothingLeftAtTheOld() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-move")
        let nginx = try ServedFiles.start(in: work, [("slow.bin", Self.size, 5)], limitRate: "512k")
        defer { nginx.stop() }
        let dl = work.file("dl")
        let serve = try ServeProcess(state: work.file("state"), directory: dl)
        defer { _ = try? serve.stop() }
        // GIVEN a download a third of the way through
        let gid = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/limited/slow.bin"], ["out": "first.bin"]]) as? String)
        #expect(Disk.waitUntil(timeout: 30) { Self.completed(serve, gid) > Int64(Self.size / 3) })
        // WHEN it is moved to another directory and name
        let moved = try #require(try serve.result("haul.move", [gid, ["dir": "sub/deeper", "out": "second.bin"]]) as? [String: Any])
        #expect(moved["path"] as? String == dl + "/sub/deeper/second.bin", "\(moved)")
        #expect(moved["resumed"] as? Bool == true)
        #expect(
            Self.entries(moved["moved"]).contains { $0["role"] as? String == "partial" && $0["to"] as? String == dl + "/sub/deeper/second.bin.haul-partial" })
        let movedAt = Self.completed(serve, gid)
        // THEN it finishes there, bit-exact, continued where it stopped rather than started again
        let ended = Self.settled(serve, gid)
        #expect(ended == "complete", "\(ended ?? "-"): \(String(describing: try? serve.result("aria2.tellStatus", [gid, ["errorMessage"]])))")
        #expect(Disk.difference(dl + "/sub/deeper/second.bin", TestData.bytes(count: Self.size, seed: 5)) == nil)
        let bytesServed = nginx.accessLog().filter { $0.uri.hasSuffix("slow.bin") }.reduce(Int64(0)) { $0 + Int64($1.bodyBytesSent) }
        #expect(bytesServed < Int64(Self.size) + Int64(Self.size) / 2, "served \(bytesServed) for a file of \(Self.size), moved at \(movedAt)")
        // AND nothing is left at the old place
        let left = (try? FileManager.default.contentsOfDirectory(atPath: dl))?.filter { $0.hasPrefix("first.bin") } ?? []
        #expect(left.isEmpty, "\(left)")
        let status = try serve.result("aria2.tellStatus", [gid, ["files"]]) as? [String: Any]
        #expect(Self.entries(status?["files"]).first?["path"] as? String == dl + "/sub/deeper/second.bin")
    }

    @Test(.timeLimit(.minutes(2)))
    func aCompleteDownloadMovesWithItsFinishedMarkAndMovesAreRefusedOutsideTheRootOverAFileOrForAnUnknownGID() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-move-done")
        let nginx = try ServedFiles.start(in: work, [("done.bin", 70_000, 6)], limitRate: "1m")
        defer { nginx.stop() }
        let dl = work.file("dl")
        let serve = try ServeProcess(state: work.file("state"), directory: dl)
        defer { _ = try? serve.stop() }
        let gid = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/done.bin"]]) as? String)
        #expect(Self.settled(serve, gid) == "complete")
        // GIVEN a file in the way, and a symlink out of the root
        try Disk.write([1, 2, 3], to: dl + "/taken.bin")
        #expect(symlink(work.file("www"), dl + "/out") == 0)
        // WHEN it is moved outside the root, over a file, through the symlink, or with a bad name
        let refusals: [(Any, String)] = [
            (["dir": "/etc"], "outside"), (["out": "taken.bin"], "exists"), (["dir": "out"], "outside"), (["out": "../x.bin"], "out"),
            (["dir": "../x"], "outside"), ([String: String](), "needs dir"), (["where": "x"], "not one of them"),
        ]
        for (options, expected) in refusals {
            let reply = try serve.call("haul.move", [gid, options])
            // THEN each is refused with a message that says why, and the file stays
            #expect(Self.error(reply).contains(expected), "\(options): \(reply)")
            #expect(Disk.exists(dl + "/done.bin"))
        }
        #expect(Self.error(try serve.call("haul.move", ["0123456789abcdef", ["out": "x.bin"]])).contains("not found"))
        // AND a download `haul queue add` put outside the root is not moved into it
        let added = try HaulBinary.run(["queue", "add", "--paused", "-o", work.file("outside.bin"), "--state", work.file("state"), nginx.baseURL + "/done.bin"])
        #expect(added.status == 0, "\(added.stderr)")
        let outside = try #require(
            (try serve.result("aria2.tellWaiting", [0, 10, ["gid"]]) as? [[String: Any]])?.compactMap { $0["gid"] as? String }.first)
        #expect(Self.error(try serve.call("haul.move", [outside, ["out": "in.bin"]])).contains("outside the download directory"))
        #expect(Disk.difference(dl + "/taken.bin", [1, 2, 3]) == nil)
        // WHEN it is moved to another name and directory
        let moved = try #require(try serve.result("haul.move", [gid, ["dir": "kept", "out": "renamed.bin"]]) as? [String: Any])
        // THEN the file is there, whole, its status says so, and its finished mark still proves it
        #expect(moved["finishedMarkKept"] as? Bool == true, "\(moved)")
        #expect(!Disk.exists(dl + "/done.bin"))
        #expect(Disk.difference(dl + "/kept/renamed.bin", TestData.bytes(count: 70_000, seed: 6)) == nil)
        let status = try serve.result("aria2.tellStatus", [gid, ["status", "files"]]) as? [String: Any]
        #expect(status?["status"] as? String == "complete" && Self.entries(status?["files"]).first?["path"] as? String == dl + "/kept/renamed.bin")
        let removal = try #require(try serve.result("haul.removeWithFiles", [gid]) as? [String: Any])
        #expect(!Disk.exists(dl + "/kept/renamed.bin"), "\(removal)")
        // AND the methods are listed beside aria2's
        let methods = try serve.result("system.listMethods") as? [String] ?? []
        #expect(methods.contains("haul.move") && methods.contains("haul.removeWithFiles") && methods.contains("aria2.remove"))
        // AND they are behind the token like every call
        let anonymous = try Curl.status(
            serve.base + "/jsonrpc", ["--data-binary", #"{"jsonrpc":"2.0","id":1,"method":"haul.removeWithFiles","params":["\#(gid)"]}"#])
        #expect(anonymous.body.contains("Unauthorized"), "\(anonymous)")
    }

    @Test(.timeLimit(.minutes(3)))
    func aDirectoryDownloadMovedMidwayByDirOnlyKeepsTheServersNameAndEndsBitExact() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-move-dir")
        let nginx = try ServedFiles.start(in: work, [("named.bin", Self.size, 7)], limitRate: "512k")
        defer { nginx.stop() }
        let dl = work.file("dl")
        let serve = try ServeProcess(state: work.file("state"), directory: dl)
        defer { _ = try? serve.stop() }
        // GIVEN a download into the root (its name from the server) a third of the way through, then paused
        let gid = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/limited/named.bin"]]) as? String)
        #expect(Disk.waitUntil(timeout: 30) { Self.completed(serve, gid) > Int64(Self.size / 3) })
        #expect(try serve.result("aria2.pause", [gid]) as? String == gid)
        // WHEN it is moved to another directory only
        let moved = try #require(try serve.result("haul.move", [gid, ["dir": "later"]]) as? [String: Any])
        // THEN it stays paused there, its partial moved with it
        #expect(moved["status"] as? String == "paused" && moved["resumed"] as? Bool == false, "\(moved)")
        #expect(moved["dir"] as? String == dl + "/later")
        #expect(Self.entries(moved["moved"]).contains { $0["role"] as? String == "partial" })
        #expect(Disk.partialBytes(in: dl) == 0 && Disk.partialBytes(in: dl + "/later") > 0)
        // AND once unpaused it finishes there under the server's name, bit-exact, with nothing left at the old place
        #expect(try serve.result("aria2.unpause", [gid]) as? String == gid)
        #expect(Self.settled(serve, gid) == "complete")
        #expect(Disk.difference(dl + "/later/named.bin", TestData.bytes(count: Self.size, seed: 7)) == nil)
        let left = (try? FileManager.default.contentsOfDirectory(atPath: dl))?.filter { $0 != "later" && $0 != ".haul-lock" } ?? []
        #expect(left.isEmpty, "\(left)")
    }

    @Test(.timeLimit(.minutes(2)))
    func aMoveOntoAnotherFileSystemIsRefusedAndCopiesNothing() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-move-xdev")
        let nginx = try ServedFiles.start(in: work, [("done.bin", 50_000, 8)], limitRate: "1m")
        defer { nginx.stop() }
        let dl = work.file("dl")
        let serve = try ServeProcess(state: work.file("state"), directory: dl)
        defer { _ = try? serve.stop() }
        let gid = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/done.bin"]]) as? String)
        #expect(Self.settled(serve, gid) == "complete")
        // GIVEN a directory inside the root that is another file system (a tmpfs bound there)
        let disk = try SmallFileSystem(sizeBytes: 4 << 20)
        defer { disk.unmount() }
        try FileManager.default.createDirectory(atPath: dl + "/other", withIntermediateDirectories: true)
        let bound = try ProcessRunner.run("/bin/mount", ["--bind", disk.path, dl + "/other"], timeout: 20)
        try #require(bound.status == 0, "mount --bind: \(bound.stderr)")
        defer { _ = try? ProcessRunner.run("/bin/umount", [dl + "/other"], timeout: 20) }
        // WHEN the complete download is moved there
        let reply = try serve.call("haul.move", [gid, ["dir": "other"]])
        // THEN it is refused as a move across file systems, and the file stays where it was, alone
        #expect(Self.error(reply).contains("another file system"), "\(reply)")
        #expect(Disk.difference(dl + "/done.bin", TestData.bytes(count: 50_000, seed: 8)) == nil)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: dl + "/other")) ?? ["?"]).isEmpty)
        let status = try serve.result("aria2.tellStatus", [gid, ["status", "files"]]) as? [String: Any]
        #expect(Self.entries(status?["files"]).first?["path"] as? String == dl + "/done.bin")
        // AND once its file is swapped for another under the same name, that file is not moved either
        try Self.swapForCopy(dl + "/done.bin")
        let swapped = try serve.call("haul.move", [gid, ["out": "elsewhere.bin"]])
        #expect(Self.error(swapped).contains("not the file this download finished"), "\(swapped)")
        #expect(Disk.exists(dl + "/done.bin") && !Disk.exists(dl + "/elsewhere.bin"))
    }
}
