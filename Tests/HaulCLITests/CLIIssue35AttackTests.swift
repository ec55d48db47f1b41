import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Attacks on issue 35's "no store call on the event loop" and "a slow store never strands a
/// download": each test here failed on the commit it was written against.
@Suite("issue 35, attacked", .serialized)
struct CLIIssue35AttackTests {
    /// Any segmented download (here `-x 4` of 20 MiB): its first response's record is saved on the
    /// pool and the head's acceptance is told later, from `BodyWriter.secondsBeforeNextChunk` on
    /// the event loop (`CurlMultiLoop.resumeDue`); that starts the segment connections, whose
    /// `SegmentCoordinator.start` checkpoints (`checkpointRecordingFailure`: a sync of the partial
    /// and a record save) right there, on the loop. A debug build stops ("a sync of ... ran on
    /// the event loop's thread"); a release build syncs and saves on the loop every transfer shares.
    @Test(.timeLimit(.minutes(1)))
    func aSegmentedDownloadNeverSyncsOnTheEventLoop() throws {
        let work = try TemporaryDirectory(prefix: "haul-attack35")
        let server = try FaultServer()
        defer { server.stop() }
        let body = TestData.bytes(count: 20 << 20, seed: 355)
        server.setResource("/big.bin", body: body)
        server.setPersistentFaults("/big.bin", [.throttle(bytesPerSecond: 4_000_000)])
        let out = work.file("big.bin")
        // WHEN a 20 MiB file is downloaded over four connections
        let result = try HaulBinary.run(["-x", "4", "-o", out, server.url("/big.bin")], timeout: 40)
        // THEN it completes, bit-exact, with no blocking call on the event loop
        #expect(!result.stderr.contains("ran on the event loop's thread"), "\(result.stderr.prefix(400))")
        #expect(result.status == 0, "status \(result.status)")
        #expect(Disk.difference(out, body) == nil)
        #expect(server.requests.count > 1, "the download used more than one connection")
    }

    /// With `--cookies`, every transfer's handler is wrapped in `CookieRecorder`, which forwards
    /// the head, the body and the abort poll but not `secondsBeforeNextChunk`: the protocol's
    /// default (0) answers, the transfer is never parked, and the body chunk after the head waits
    /// for the record save in `BodyWriter.transferDidReceiveBody` (`recordSaved(waiting: true)`),
    /// on the event loop's thread, while another process holds the store locked: every transfer
    /// of the process stops meanwhile. The same run without `--cookies` passes
    /// (`CLIStoreStallTests.aResponseHeadArrivingWhileTheStoreIsLockedParksOnlyItsOwnTransfer`).
    @Test(.timeLimit(.minutes(2)))
    func aHeadArrivingWhileTheStoreIsLockedParksOnlyItsOwnTransferWithCookiesToo() throws {
        let work = try TemporaryDirectory(prefix: "haul-attack35")
        let server = try FaultServer()
        defer { server.stop() }
        let a = TestData.bytes(count: 3 << 20, seed: 356)
        let b = TestData.bytes(count: 2 << 20, seed: 357)
        server.setResource("/a.bin", body: a)
        server.setResource("/b.bin", body: b)
        server.setPersistentFaults("/a.bin", [.throttle(bytesPerSecond: 300_000)])
        server.enqueueFaults("/b.bin", [.combined([.delayHeaders(seconds: 2), .throttle(bytesPerSecond: 300_000)])])
        let cookies = work.file("cookies.txt")
        try Disk.write(Array("# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\tabc\n".utf8), to: cookies)
        let state = work.file("state")
        let out = work.file("out")
        let added = try HaulBinary.run([
            "queue", "add", "--state", state, "-d", out, "-x", "1", "--cookies", cookies, server.url("/a.bin"), server.url("/b.bin"),
        ])
        #expect(added.status == 0, "\(added.stderr)")
        // GIVEN a queue run, with cookies, of a download at 300 KB/s and one whose server is slow to answer
        let run = try RunningHaul(["queue", "run", "--state", state, "-j", "2"])
        defer { _ = try? run.wait(timeout: 60) }
        #expect(Disk.waitUntil(timeout: 20) { Disk.partialBytes(in: out) > 100_000 })
        // WHEN another process holds the store's write lock for 4 s, and b's head arrives meanwhile
        let holder = try StoreLockHolder(store: state + "/haul.sqlite", seconds: 4)
        usleep(2_500_000)
        let before = Disk.partialBytes(in: out)
        usleep(1_000_000)
        let during = Disk.partialBytes(in: out) - before
        holder.waitUntilReleased()
        // THEN a went on at its rate while b's record waited for the store
        #expect(during > 150_000, "only \(during) bytes arrived in the second after b's head, while the store was locked")
        // AND both complete, bit-exact, with the cookie sent
        #expect(try run.wait(timeout: 60) == .exited(0), "\(run.stderr)")
        #expect(Disk.difference(out + "/a.bin", a) == nil)
        #expect(Disk.difference(out + "/b.bin", b) == nil)
        #expect(server.requests.contains { $0.header("Cookie")?.contains("session=abc") == true })
    }

    /// A segmented download whose main connection dropped is retried while its segment connections
    /// run; the retry's server ignores Range (200): `BodyWriter.accept` calls `replacePartial` from
    /// the head's callback, on the event loop, and `DownloadRunner.discardBytes` calls
    /// `SegmentDriver.stop` -> `SegmentCoordinator.stopAndWait`, which waits there for the monitor's
    /// checkpoint (a sync and a record save). With the store locked by another process, that wait
    /// holds the loop, and every other transfer of the process stops until the lock is released.
    /// (A debug build stops first at `aSegmentedDownloadNeverSyncsOnTheEventLoop`'s abort; with
    /// that abort skipped under gdb, b received 0 bytes for the 2.2 s between a's 200 and the
    /// lock's release.)
    @Test(.timeLimit(.minutes(2)))
    func aSegmentedRestartInPlaceNeverWaitsForACheckpointOnTheEventLoop() throws {
        let work = try TemporaryDirectory(prefix: "haul-attack35")
        let server = try FaultServer()
        defer { server.stop() }
        let a = TestData.bytes(count: 20 << 20, seed: 358)
        let b = TestData.bytes(count: 4 << 20, seed: 359)
        server.setResource("/a.bin", body: a)
        server.setResource("/b.bin", body: b)
        let throttle = Fault.throttle(bytesPerSecond: 300_000)
        server.setPersistentFaults("/a.bin", [throttle])
        server.setPersistentFaults("/b.bin", [throttle])
        // The main connection drops at 400 KB; three segment connections; the main's retry is answered 2 s late, with the whole file.
        server.enqueueFaults(
            "/a.bin",
            [.combined([throttle, .dropAfter(bytes: 400_000)]), throttle, throttle, throttle, .combined([.delayHeaders(seconds: 2), .ignoreRange, throttle])])
        let state = work.file("state")
        let out = work.file("out")
        for (name, connections) in [("a.bin", "4"), ("b.bin", "1")] {
            let added = try HaulBinary.run(["queue", "add", "--state", state, "-o", out + "/" + name, "-x", connections, server.url("/" + name)])
            #expect(added.status == 0, "\(added.stderr)")
        }
        // GIVEN a queue run of a segmented download and another at 300 KB/s
        let run = try RunningHaul(["queue", "run", "--state", state, "-j", "2"])
        defer { _ = try? run.wait(timeout: 60) }
        // WHEN the main connection's retry was sent, another process holds the store locked for 4 s
        #expect(Disk.waitUntil(timeout: 20) { server.requests.filter { $0.path.hasPrefix("/a.bin") }.count >= 5 })
        let holder = try StoreLockHolder(store: state + "/haul.sqlite", seconds: 4)
        // (the retry's head, a 200, comes 2 s after its request)
        usleep(2_300_000)
        let partial = out + "/b.bin.haul-partial"
        let before = Disk.size(partial) ?? 0
        usleep(1_200_000)
        let during = (Disk.size(partial) ?? 0) - before
        holder.waitUntilReleased()
        // THEN b went on at its rate (0 when the restart waited on the loop for the checkpoint)
        #expect(during > 150_000, "only \(during) bytes of b arrived in 1.2 s after a's restart, while the store was locked")
        #expect(try run.wait(timeout: 90) == .exited(0), "\(run.stderr)")
        #expect(Disk.difference(out + "/a.bin", a) == nil)
        #expect(Disk.difference(out + "/b.bin", b) == nil)
    }

    /// A queue run whose response head arrives while another process holds the SQLite store's
    /// write lock for longer than its busy timeout (5 s): the record that must be saved before
    /// the body is written cannot be saved yet. The download must wait or retry, never fail for good.
    @Test(.timeLimit(.minutes(1)))
    func aHeadArrivingWhileTheStoreIsLockedPastItsBusyTimeoutStillCompletes() throws {
        let work = try TemporaryDirectory(prefix: "haul-attack35")
        let server = try FaultServer()
        defer { server.stop() }
        let body = TestData.bytes(count: 2 << 20, seed: 352)
        server.setResource("/b.bin", body: body)
        server.enqueueFaults("/b.bin", [.delayHeaders(seconds: 1.5)])
        let state = work.file("state")
        let out = work.file("out")
        let added = try HaulBinary.run(["queue", "add", "--state", state, "-d", out, "-x", "1", server.url("/b.bin")])
        #expect(added.status == 0, "\(added.stderr)")
        // GIVEN a queue run whose server is slow to answer
        let run = try RunningHaul(["queue", "run", "--state", state, "-j", "1"])
        defer { _ = try? run.wait(timeout: 5) }
        #expect(Disk.waitUntil(timeout: 10) { !server.requests.isEmpty })
        // WHEN another process holds the store's write lock for 8 s, and the head arrives meanwhile
        let holder = try StoreLockHolder(store: state + "/haul.sqlite", seconds: 8)
        holder.waitUntilReleased()
        // THEN once the store is free the download completes, bit-exact
        #expect(try run.wait(timeout: 30) == .exited(0), "\(run.stderr)")
        #expect(Disk.difference(out + "/b.bin", body) == nil)
        let list = try HaulBinary.run(["queue", "list", "--state", state])
        #expect(list.stdoutString.contains("completed"), "\(list.stdoutString)")
    }

    /// `HAUL_PG_STATEMENT_SECONDS` below a millisecond is accepted (it is finite and positive)
    /// and becomes `statement_timeout = 0` on the server, which is no timeout at all, while the
    /// client's deadline of 0 ms gives up every statement. A value the code accepts must work.
    @Test(.timeLimit(.minutes(1)))
    func aSubMillisecondStatementDeadlineIsClampedOrRefusedNeverUnusable() throws {
        let cluster = try PostgresCluster()
        defer { cluster.stop() }
        _ = try cluster.createDatabase("tiny")
        let start = Date()
        let listed = try HaulBinary.run(
            ["queue", "list", "--state", cluster.uri(database: "tiny")], environment: ["HAUL_PG_STATEMENT_SECONDS": "0.0004"], timeout: 20)
        let took = Date().timeIntervalSince(start)
        #expect(listed.status == 0 || listed.status == 2, "status \(listed.status) after \(took) s: \(listed.stderr)")
        #expect(took < 10, "took \(took) s")
    }

    /// Another session holds a lock on the queue's table for longer than the statement deadline
    /// (`HAUL_PG_STATEMENT_SECONDS=1`): each statement of the worker waits for it. The server's
    /// `statement_timeout` is the same second as the client's deadline, so which fires first is
    /// a race: the client's gives the connection up and retries; the server's cancels the
    /// statement (SQLSTATE 57014), an error that is neither retried nor a lost connection, and
    /// becomes `.io`: a claim ends its worker, a record save fails its download for good.
    @Test(.timeLimit(.minutes(2)))
    func aTableLockedPastTheStatementDeadlineDelaysTheRunButFailsNothing() throws {
        let fleet = try FleetFixture(limitRate: "300k")
        defer { fleet.stop() }
        let names = try fleet.makeFiles(8, size: 500_000...700_000)
        try fleet.add(names, path: "/limited/")
        // GIVEN a worker of two jobs whose statements have a 1 s deadline
        let worker = try FleetWorker("locked", fixture: fleet, jobs: 2, environment: ["HAUL_PG_STATEMENT_SECONDS": "1"])
        #expect(eventually(20) { Disk.partialBytes(in: fleet.output) > 300_000 })
        // WHEN another session holds the table locked for 6 s, twice
        for _ in 0..<2 {
            try fleet.psql("BEGIN; LOCK TABLE downloads IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(6); COMMIT;")
            Thread.sleep(forTimeInterval: 0.3)
        }
        // THEN the run ends with every item completed once
        let status = try worker.wait(timeout: 60)
        let rows = try fleet.psql("SELECT id, state, attempts, last_error FROM downloads WHERE state <> 'completed' ORDER BY id")
        #expect(status == 0, "status \(status): \(worker.stderr)")
        #expect(rows.isEmpty, "items not completed: \(rows)")
        #expect(try fleet.completedTwice() == 0)
    }

    /// A fleet worker whose PostgreSQL server is stopped while a response head arrives, for
    /// longer than the worker's reconnection window (`HAUL_PG_RECONNECT_SECONDS=2`): the record
    /// the head must have saved cannot be saved. Once the server is back, the item must complete
    /// (issue 35: "every item completing once the database is back"), not fail for good.
    @Test(.timeLimit(.minutes(2)))
    func aHeadArrivingWhileTheDatabaseIsStoppedStillCompletesOnceItIsBack() throws {
        let fleet = try FleetFixture()
        defer { fleet.stop() }
        let server = try FaultServer()
        defer { server.stop() }
        let body = TestData.bytes(count: 2 << 20, seed: 353)
        server.setResource("/b.bin", body: body)
        server.enqueueFaults("/b.bin", [.delayHeaders(seconds: 1.5)])
        let added = try HaulBinary.run(["queue", "add", "--state", fleet.uri("adder"), "-d", fleet.output, server.url("/b.bin")])
        try #require(added.status == 0, "\(added.stderr)")
        // GIVEN a worker whose server is slow to answer
        let worker = try FleetWorker("stopped-db", fixture: fleet, jobs: 1, environment: ["HAUL_PG_RECONNECT_SECONDS": "2"])
        #expect(eventually(10) { !server.requests.isEmpty })
        // WHEN PostgreSQL stops for 5 s, the head arriving meanwhile
        fleet.cluster.stopServer()
        Thread.sleep(forTimeInterval: 5)
        try fleet.cluster.start()
        // THEN once it is back the item completes, bit-exact
        let status = try worker.wait(timeout: 40)
        let rows = try fleet.psql("SELECT id, state, attempts, last_error FROM downloads WHERE state <> 'completed' ORDER BY id")
        #expect(status == 0, "status \(status): \(worker.stderr)")
        #expect(rows.isEmpty, "items not completed: \(rows)")
        #expect(Disk.difference(fleet.output + "/b.bin", body) == nil)
    }

    /// `queue add` whose COMMIT reply is lost runs its transaction again and looks for the rows
    /// its first run added by their `write_token`; but an idle worker, woken by the NOTIFY of that
    /// commit, claimed the new row in the meantime, and a claim overwrites `write_token` with its
    /// own. The second run finds nothing, adds again, and refuses the item as "already used by
    /// queued download N": its own. The addition must be found, whatever a worker did to it since.
    @Test(.timeLimit(.minutes(1)))
    func anAdditionWhoseCommitReplyIsLostIsFoundAgainAfterAWorkerClaimedIt() throws {
        let fleet = try FleetFixture(limitRate: "100k")
        defer { fleet.stop() }
        let names = try fleet.makeFiles(2, size: 1_000_000...1_000_000)
        try fleet.add([names[0]], path: "/limited/")
        // GIVEN a worker busy with a slow item, and an idle one waiting for a NOTIFY
        let busy = try FleetWorker("busy", fixture: fleet, jobs: 1)
        #expect(try eventually(10) { try fleet.count("SELECT count(*) FROM downloads WHERE state = 'running'") == 1 })
        let idle = try FleetWorker("idle", fixture: fleet, jobs: 1)
        Thread.sleep(forTimeInterval: 1)
        // WHEN an item is added through a relay that loses the reply to the addition's COMMIT
        let relay = try TCPRelay(to: fleet.cluster.port)
        defer { relay.stop() }
        relay.set(.cutAfterCommit(following: "INSERT INTO downloads"))
        let url = fleet.nginx.baseURL + "/limited/" + names[1]
        let added = try HaulBinary.run(["queue", "add", "--state", fleet.uri("adder", port: relay.port), "-d", fleet.output, url])
        let rows = try fleet.psql("SELECT id, state, lease_worker FROM downloads ORDER BY id")
        for worker in [busy, idle] { worker.send(SIGINT) }
        for worker in [busy, idle] { _ = try? worker.wait(timeout: 20) }
        // THEN the addition succeeds, once
        #expect(relay.cuts == 1, "the relay cut the addition's reply")
        #expect(added.status == 0, "status \(added.status): \(added.stderr); rows: \(rows)")
        #expect(try fleet.count("SELECT count(*) FROM downloads WHERE url LIKE '%\(names[1])'") == 1)
    }

    /// `queue rm` whose COMMIT reply is lost: the transaction runs again, finds no such item
    /// (its first run deleted it) and says "no download 1 in the queue", exiting non-zero for a
    /// removal that happened. Like an addition, a removal must be idempotent across a lost reply.
    @Test(.timeLimit(.minutes(1)))
    func aRemovalWhoseCommitReplyIsLostSucceeds() throws {
        let fleet = try FleetFixture()
        defer { fleet.stop() }
        let names = try fleet.makeFiles(1, size: 1000...1000)
        try fleet.add(names)
        let relay = try TCPRelay(to: fleet.cluster.port)
        defer { relay.stop() }
        relay.set(.cutAfterCommit(following: "DELETE FROM downloads"))
        // WHEN the queued item is removed through a relay that loses the reply to the COMMIT
        let removed = try HaulBinary.run(["queue", "rm", "--state", fleet.uri("remover", port: relay.port), "1"])
        // THEN it is gone, and the removal says it succeeded
        #expect(relay.cuts == 1, "the relay cut the removal's reply")
        #expect(try fleet.count("SELECT count(*) FROM downloads") == 0)
        #expect(removed.status == 0, "status \(removed.status): \(removed.stderr)")
    }

    /// Commit 3e2c2af (on main) added the migration `v5-claim-token` (a `claim_token` column);
    /// 33f7b0a renamed it in place to `v5-write-token`, though "names never change once released":
    /// a fleet database a worker of 3e2c2af migrated held a migration the new code did not know,
    /// and every worker of the new build refused to open it. (Now `v5-claim-token` stays, and the
    /// addition's token is `v6-add-token`.)
    @Test(.timeLimit(.minutes(1)))
    func aDatabaseMigratedByThePreviousCommitStillOpens() throws {
        let fleet = try FleetFixture()
        defer { fleet.stop() }
        try fleet.installAudit()
        // GIVEN the database as 3e2c2af left it: its fifth migration and its column
        try fleet.psql(
            """
            DELETE FROM schema_migrations WHERE name = 'v6-add-token';
            ALTER TABLE downloads DROP COLUMN add_token;
            """)
        // WHEN the new build opens it
        let listed = try HaulBinary.run(["queue", "list", "--state", fleet.uri("upgraded")])
        // THEN it works (migrating what it must)
        #expect(listed.status == 0, "status \(listed.status): \(listed.stderr)")
    }
}
