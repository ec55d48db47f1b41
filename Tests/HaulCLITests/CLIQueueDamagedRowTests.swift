import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A store with one damaged row (a value changed behind Haul's back, by sqlite3 or a failing
/// disk): that item fails alone, with the reason, and the rest of the queue works.
@Suite("haul queue: a damaged row", .serialized)
struct CLIQueueDamagedRowTests {
    @Test(.timeLimit(.minutes(1)))
    func aRowWithDamagedOptionsFailsAloneAndTheOthersRun() throws {
        // GIVEN three queued downloads, the second one's stored options damaged
        let server = try FaultServer()
        let bodies = (0..<3).map { TestData.bytes(count: 40_000 + $0 * 1_000, seed: 400 + UInt64($0)) }
        for (index, body) in bodies.enumerated() { server.setResource("/d\(index).bin", body: body) }
        let store = try StoreFixture()
        let out = try TemporaryDirectory(prefix: "haul-cli-out")
        let added = try store.haul(["add", server.url("/d0.bin"), server.url("/d1.bin"), server.url("/d2.bin"), "-d", out.path])
        let ids = StoreFixture.ids(added)
        try #require(ids.count == 3, "stderr: \(added.stderr)")
        try StoreSurgery.execute("UPDATE downloads SET options = '{damaged' WHERE id = \(ids[1])", in: store.path)

        // WHEN the queue runs
        let run = try store.haul(["run", "-q", "--retry", "0"])

        // THEN the other two are downloaded, the damaged one is failed with the reason, and the
        // run says a download failed (exit 6: the store holds something unreadable)
        #expect(run.status == 6, "stderr: \(run.stderr)")
        #expect(Disk.difference(out.file("d0.bin"), bodies[0]) == nil)
        #expect(Disk.difference(out.file("d2.bin"), bodies[2]) == nil)
        #expect(!Disk.exists(out.file("d1.bin")))
        let listed = try store.items()
        #expect(listed.state(ids[0]) == "completed")
        #expect(listed.state(ids[2]) == "completed")
        #expect(listed.state(ids[1]) == "failed")
        let reason = listed.item(ids[1])?["lastError"] as? String ?? ""
        #expect(reason.contains("its stored options are damaged"), "lastError: \(reason)")
    }

    @Test(.timeLimit(.minutes(1)))
    func aRowWithDamagedOptionsIsListedWithItsReasonAndCanBeRemoved() throws {
        // GIVEN a queued download whose stored options are damaged, and a sound one
        let store = try StoreFixture()
        let out = try TemporaryDirectory(prefix: "haul-cli-out")
        let added = try store.haul(["add", "http://127.0.0.1:1/a.bin", "http://127.0.0.1:1/b.bin", "-d", out.path])
        let ids = StoreFixture.ids(added)
        try #require(ids.count == 2, "stderr: \(added.stderr)")
        try StoreSurgery.execute("UPDATE downloads SET options = '{damaged' WHERE id = \(ids[0])", in: store.path)

        // WHEN the queue is listed, as a table and as JSON
        let table = try store.haul(["list"])
        let listed = try store.items()

        // THEN both succeed: the damaged one is shown failed with the reason, the sound one queued
        #expect(table.status == 0, "stderr: \(table.stderr)")
        let row = table.stdoutString.split(separator: "\n").first { $0.hasPrefix("\(ids[0]) ") } ?? ""
        #expect(row.contains("failed") && row.contains("its stored options are damaged"), "list: \(table.stdoutString)")
        #expect(listed.state(ids[0]) == "failed")
        #expect((listed.item(ids[0])?["lastError"] as? String)?.contains("its stored options are damaged") == true, "\(listed.values)")
        #expect(listed.state(ids[1]) == "queued")

        // WHEN the damaged one is removed
        let removed = try store.haul(["rm", "\(ids[0])"])

        // THEN it leaves the queue and the sound one stays
        #expect(removed.status == 0, "stderr: \(removed.stderr)")
        let after = try store.items()
        #expect(after.values.count == 1)
        #expect(after.state(ids[1]) == "queued")
    }

    @Test(.timeLimit(.minutes(1)))
    func serveRunsNewDownloadsBesideADamagedRow() throws {
        // GIVEN a store whose only queued download has damaged options, served by `haul serve`
        let server = try FaultServer()
        let body = TestData.bytes(count: 60_000, seed: 410)
        server.setResource("/new.bin", body: body)
        let work = try TemporaryDirectory(prefix: "haul-serve-damaged")
        let store = StoreFixture(directory: work.file("state"))
        let added = try store.haul(["add", "http://127.0.0.1:1/old.bin", "-o", work.file("old.bin")])
        let damaged = try #require(StoreFixture.ids(added).first, "stderr: \(added.stderr)")
        try StoreSurgery.execute("UPDATE downloads SET options = '{damaged' WHERE id = \(damaged)", in: store.path)
        let serve = try ServeProcess(state: store.path, directory: work.file("dl"))
        defer { _ = try? serve.stop() }

        // WHEN a download is added over JSON-RPC
        let gid = try #require(try serve.result("aria2.addUri", [[server.url("/new.bin")], ["out": "new.bin"]]) as? String)

        // THEN it completes, and the damaged one is failed with the reason
        let completed = Disk.waitUntil(timeout: 20) {
            ((try? serve.result("aria2.tellStatus", [gid, ["status"]])) as? [String: String])?["status"] == "complete"
        }
        #expect(completed, "the new download did not complete; stderr: \(serve.running.stderr)")
        #expect(Disk.difference(work.file("dl/new.bin"), body) == nil)
        let listed = try store.items()
        #expect(listed.state(damaged) == "failed")
        #expect((listed.item(damaged)?["lastError"] as? String)?.contains("its stored options are damaged") == true, "\(listed.values)")
    }
}

/// Changes a store's database behind Haul's back, as a person with sqlite3 (or a failing disk)
/// would: through python3's own sqlite3 module, not Haul's code.
enum StoreSurgery {
    /// Runs `sql` (one statement) on the store in the state directory `state`, and commits.
    static func execute(_ sql: String, in state: String) throws {
        let program = """
            import sqlite3, sys
            connection = sqlite3.connect(sys.argv[1])
            connection.execute(sys.argv[2])
            connection.commit()
            connection.close()
            """
        let result = try ProcessRunner.run(try python3(), ["-c", program, state + "/haul.sqlite", sql])
        guard result.status == 0 else { throw TestSupportError("python3 could not run \(sql): \(result.stderr)") }
    }

    private static func python3() throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let candidates = path.split(separator: ":").map { "\($0)/python3" } + ["/usr/bin/python3"]
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw TestSupportError("python3 is not installed; install it with `apt-get install python3` (scripts/install.sh does this)")
        }
        return found
    }
}
