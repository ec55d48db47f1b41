import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `haul serve` killed (as by `kill -9`, through the test-only `HAUL_TEST_CRASH_AT` switch) at
/// each step of `haul.move`: after a file got its new name, after the store named the new place,
/// after an old name went. Started again, each file has one name, the one the store names, and the
/// download completes bit-exact (a paused one continues where it stopped).
@Suite("haul serve: a crash at each step of haul.move")
struct CLIServeMoveCrashTests {
    static let size = 3 << 20

    /// The steps of a move, in order (a move of one file reaches each once).
    static let steps = ["after-move-link:1", "after-move-relocate", "after-move-unlink:1"]

    /// This process's environment with the crash switch set to `step`.
    static func crashing(at step: String) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["HAUL_TEST_CRASH_AT"] = step
        return environment
    }

    /// Sends `haul.move` of `gid` to `{dir: sub, out: name}` and waits for the server to die at
    /// its crash point; whether it died by SIGKILL.
    static func moveAndDie(_ serve: ServeProcess, _ gid: String, out name: String) throws -> Bool {
        _ = try? serve.call("haul.move", [gid, ["dir": "sub", "out": name]])
        return try serve.running.wait(timeout: 20) == .signalled(SIGKILL)
    }

    @Test(.timeLimit(.minutes(2)), arguments: steps)
    func aPausedDownloadMovedThroughACrashContinuesBitExactUnderOneName(_ step: String) throws {
        try Self.pausedMoveThroughACrash(at: step, options: ["split": "1"], size: Self.size, seed: 31)
    }

    /// A segmented download's partial and its segment map: two files, so two links and two unlinks.
    @Test(.timeLimit(.minutes(2)), arguments: ["after-move-link:1", "after-move-link:2", "after-move-relocate", "after-move-unlink:1", "after-move-unlink:2"])
    func aPausedSegmentedDownloadMovedThroughACrashContinuesBitExactUnderOneNamePerFile(_ step: String) throws {
        try Self.pausedMoveThroughACrash(at: step, options: ["split": "4"], size: 8 << 20, seed: 33, segmented: true)
    }

    /// The same on PostgreSQL: the intent is in its store.
    @Test(.timeLimit(.minutes(2)), arguments: ["after-move-link:1", "after-move-relocate"])
    func aPausedDownloadInAPostgresStoreMovedThroughACrashContinuesBitExactUnderOneName(_ step: String) throws {
        let cluster = try PostgresCluster()
        defer { cluster.stop() }
        _ = try cluster.createDatabase("moves")
        try Self.pausedMoveThroughACrash(at: step, options: ["split": "1"], size: Self.size, seed: 35, state: cluster.uri(database: "moves"))
    }

    /// GIVEN a download (`options`) paused a third of the way through under a server set to die at
    /// `step`, WHEN it is moved, THEN started again it has one name per file and completes
    /// bit-exact from where it stopped. `state`: the store (a directory in the test's own by default).
    static func pausedMoveThroughACrash(
        at step: String, options: [String: String], size: Int, seed: UInt64, segmented: Bool = false, state: String? = nil
    ) throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-move-crash-step")
        let nginx = try ServedFiles.start(in: work, [("slow.bin", size, seed)], limitRate: "1m")
        defer { nginx.stop() }
        let dl = work.file("dl")
        let store = state ?? work.file("state")
        // GIVEN a download paused a third of the way through, under a server set to die at `step`
        let serve = try ServeProcess(state: store, directory: dl, environment: Self.crashing(at: step))
        defer { _ = try? serve.stop() }
        var add = options
        add["out"] = "first.bin"
        let gid = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/limited/slow.bin"], add]) as? String)
        #expect(Disk.waitUntil(timeout: 30) { CLIServeFilesTests.completed(serve, gid) > Int64(size / 3) })
        #expect(try serve.result("aria2.pause", [gid]) as? String == gid)
        #expect(
            Disk.waitUntil(timeout: 10) { (try? serve.result("aria2.tellStatus", [gid, ["status"]]) as? [String: Any])?["status"] as? String == "paused" })
        if segmented {
            #expect(Disk.exists(dl + "/first.bin.haul-segments"), "\(CLIServeFilesAttackTests.files(in: dl))")
        }
        // WHEN it is moved, and the server dies at that step of the move
        #expect(try Self.moveAndDie(serve, gid, out: "second.bin"), "\(step): the crash point was not reached; \(serve.running.stderr)")
        let leftByCrash = CLIServeFilesAttackTests.files(in: dl)
        // THEN started again, one name of each file is left, where the store says
        let again = try ServeProcess(state: store, directory: dl)
        defer { _ = try? again.stop() }
        let onePartial = Disk.waitUntil(timeout: 10) {
            let files = CLIServeFilesAttackTests.files(in: dl)
            return files.filter { $0.hasSuffix(".haul-partial") }.count == 1 && files.filter { $0.hasSuffix(".haul-segments") }.count <= 1
        }
        #expect(onePartial, "\(step): crash left \(leftByCrash); after the restart: \(CLIServeFilesAttackTests.files(in: dl))")
        // AND unpaused, it ends complete and bit-exact where its status says
        #expect(try again.result("aria2.unpause", [gid]) as? String == gid)
        let ended = CLIServeFilesTests.settled(again, gid)
        #expect(ended == "complete", "\(step): \(String(describing: try? again.result("aria2.tellStatus", [gid, ["errorMessage"]])))")
        let status = try again.result("aria2.tellStatus", [gid, ["files"]]) as? [String: Any]
        let path = CLIServeFilesTests.entries(status?["files"]).first?["path"] as? String ?? "-"
        #expect(Disk.difference(path, TestData.bytes(count: size, seed: seed)) == nil, "\(step): \(path); crash left \(leftByCrash)")
        // AND continued rather than started again
        let served = nginx.accessLog().filter { $0.uri.hasSuffix("slow.bin") }.reduce(Int64(0)) { $0 + Int64($1.bodyBytesSent) }
        #expect(served < Int64(size) + Int64(size) / 2, "\(step): served \(served)")
        // AND nothing but its file is left
        #expect(CLIServeFilesAttackTests.files(in: dl) == [String(path.dropFirst(dl.count + 1))], "\(step): \(CLIServeFilesAttackTests.files(in: dl))")
    }

    @Test(.timeLimit(.minutes(2)), arguments: ["after-move-link:1", "after-move-relocate"])
    func aRunningDownloadMovedThroughACrashGoesOnByItselfBitExactUnderOneName(_ step: String) throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-move-crash-running")
        let nginx = try ServedFiles.start(in: work, [("slow.bin", Self.size, 34)], limitRate: "1m")
        defer { nginx.stop() }
        let dl = work.file("dl")
        // GIVEN a download running, a third of the way through, under a server set to die at `step`
        let serve = try ServeProcess(state: work.file("state"), directory: dl, environment: Self.crashing(at: step))
        defer { _ = try? serve.stop() }
        let gid = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/limited/slow.bin"], ["split": "1", "out": "first.bin"]]) as? String)
        #expect(Disk.waitUntil(timeout: 30) { CLIServeFilesTests.completed(serve, gid) > Int64(Self.size / 3) })
        // WHEN it is moved, and the server dies at that step of the move
        #expect(try Self.moveAndDie(serve, gid, out: "second.bin"), "\(step): the crash point was not reached; \(serve.running.stderr)")
        let leftByCrash = CLIServeFilesAttackTests.files(in: dl)
        // THEN started again, with nothing asked, it ends complete and bit-exact where its status says
        let again = try ServeProcess(state: work.file("state"), directory: dl)
        defer { _ = try? again.stop() }
        let ended = CLIServeFilesTests.settled(again, gid, timeout: 30)
        #expect(ended == "complete", "\(step): \(String(describing: try? again.result("aria2.tellStatus", [gid, ["status", "errorMessage"]])))")
        let status = try again.result("aria2.tellStatus", [gid, ["files"]]) as? [String: Any]
        let path = CLIServeFilesTests.entries(status?["files"]).first?["path"] as? String ?? "-"
        #expect(Disk.difference(path, TestData.bytes(count: Self.size, seed: 34)) == nil, "\(step): \(path); crash left \(leftByCrash)")
        // AND continued rather than started again, and nothing but its file is left
        let served = nginx.accessLog().filter { $0.uri.hasSuffix("slow.bin") }.reduce(Int64(0)) { $0 + Int64($1.bodyBytesSent) }
        #expect(served < Int64(Self.size) + Int64(Self.size) / 2, "\(step): served \(served)")
        #expect(CLIServeFilesAttackTests.files(in: dl) == [String(path.dropFirst(dl.count + 1))], "\(step): \(CLIServeFilesAttackTests.files(in: dl))")
    }

    @Test(.timeLimit(.minutes(2)), arguments: steps)
    func aFinishedFileMovedThroughACrashKeepsOneNameTheStoreNamesAndItsProof(_ step: String) throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-move-crash-done")
        let nginx = try ServedFiles.start(in: work, [("done.bin", 70_000, 32)], limitRate: "1m")
        defer { nginx.stop() }
        let dl = work.file("dl")
        // GIVEN a finished download, under a server set to die at `step`
        let serve = try ServeProcess(state: work.file("state"), directory: dl, environment: Self.crashing(at: step))
        defer { _ = try? serve.stop() }
        let gid = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/done.bin"]]) as? String)
        #expect(CLIServeFilesTests.settled(serve, gid) == "complete")
        // WHEN it is moved, and the server dies at that step of the move
        #expect(try Self.moveAndDie(serve, gid, out: "moved.bin"), "\(step): the crash point was not reached; \(serve.running.stderr)")
        let leftByCrash = CLIServeFilesAttackTests.files(in: dl)
        // THEN started again, it is complete, its file bit-exact at the path its status names, and
        // that is the only name left
        let again = try ServeProcess(state: work.file("state"), directory: dl)
        defer { _ = try? again.stop() }
        let status = try again.result("aria2.tellStatus", [gid, ["status", "files"]]) as? [String: Any]
        let path = CLIServeFilesTests.entries(status?["files"]).first?["path"] as? String ?? "-"
        #expect(status?["status"] as? String == "complete", "\(step): \(String(describing: status))")
        #expect(Disk.difference(path, TestData.bytes(count: 70_000, seed: 32)) == nil, "\(step): \(path); crash left \(leftByCrash)")
        #expect(
            Disk.waitUntil(timeout: 10) { CLIServeFilesAttackTests.files(in: dl) == [String(path.dropFirst(dl.count + 1))] },
            "\(step): crash left \(leftByCrash); after the restart: \(CLIServeFilesAttackTests.files(in: dl))")
        // AND it is still provably the download's own: removing it with its files deletes it
        let removed = try #require(try again.result("haul.removeWithFiles", [gid]) as? [String: Any])
        #expect(
            CLIServeFilesTests.entries(removed["deleted"]).contains { $0["role"] as? String == "file" && $0["path"] as? String == path },
            "\(step): \(removed)")
        #expect(CLIServeFilesAttackTests.files(in: dl).isEmpty, "\(step): \(CLIServeFilesAttackTests.files(in: dl))")
    }
}
