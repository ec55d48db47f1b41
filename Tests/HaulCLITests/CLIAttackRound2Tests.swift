import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Attacks on 0789078 (a finish group settles its completions before they are announced; v5/v6
/// PostgreSQL migrations):
/// each test here failed on the commit it was written against.
@Suite("0789078, attacked (round 2)", .serialized)
struct CLIAttackRound2Tests {
    /// The group's settlement (`DownloadQueue.settleCompleted`) commits `speed = 0` and the final
    /// figures, and only then does the runner publish its last `.progress` (DownloadRunner.finish,
    /// after `FinishGroups.place`). That report is posted to the progress writer, which writes it
    /// (`updateProgress` is fenced by the epoch alone, which a settlement leaves as it is) when the
    /// last write is over a second old: here, because the settlement waited for a store that
    /// another process held locked. The completed row is written after its settlement and left
    /// with a speed for good (the worker's own settlement, which used to come after that report
    /// and zero it, is skipped as a conflict). `QueueItem` and aria2's `tellStatus` mask a speed
    /// outside `running`; the row itself (and any reader of the shared database) does not.
    @Test(.timeLimit(.minutes(1)))
    func aCompletedDownloadKeepsNoSpeedInTheStore() throws {
        let work = try TemporaryDirectory(prefix: "haul-attack-r2")
        let server = try FaultServer()
        defer { server.stop() }
        let body = TestData.bytes(count: 1 << 20, seed: 3601)
        server.setResource("/a.bin", body: body)
        server.setPersistentFaults("/a.bin", [.throttle(bytesPerSecond: 500_000)])
        let state = work.file("state")
        let out = work.file("out")
        let added = try HaulBinary.run(["queue", "add", "--state", state, "-d", out, "-x", "1", server.url("/a.bin")])
        #expect(added.status == 0, "\(added.stderr)")
        // GIVEN a queue run of a 1 MiB download at 500 KB/s
        let run = try RunningHaul(["queue", "run", "--state", state, "-j", "1"])
        defer { _ = try? run.wait(timeout: 60) }
        #expect(Disk.waitUntil(timeout: 20) { Disk.partialBytes(in: out) > 600_000 })
        // WHEN another process holds the store's write lock for 3 s (less than the busy timeout)
        // while the transfer ends and its group finishes
        let holder = try StoreLockHolder(store: state + "/haul.sqlite", seconds: 3)
        holder.waitUntilReleased()
        #expect(try run.wait(timeout: 30) == .exited(0), "\(run.stderr)")
        #expect(Disk.difference(out + "/a.bin", body) == nil)
        // THEN the completed row shows no speed
        let row = try ProcessRunner.run(
            "/usr/bin/sqlite3", [state + "/haul.sqlite", "SELECT state || ' ' || (speed = 0) || ' ' || bytes FROM downloads"], timeout: 10)
        #expect(row.stdoutString.trimmingCharacters(in: .whitespacesAndNewlines) == "completed 1 \(body.count)", "row: \(row.stdoutString)")
    }

    /// 33f7b0a (on main through 314d64f) named the fifth migration `v5-write-token` (a
    /// `write_token` column); 0789078 names it `v5-claim-token` again and adds `v6-add-token`,
    /// restoring 3e2c2af's name but forgetting the databases the builds in between migrated: their
    /// `schema_migrations` holds `v5-write-token`, which this build does not know, and every worker
    /// refuses the database as written by a newer version. A released name is a name for good: it
    /// must stay known (and its column be taken over or left alone).
    @Test(.timeLimit(.minutes(1)))
    func aDatabaseMigratedByTheBuildsNamingWriteTokenStillOpens() throws {
        let fleet = try FleetFixture()
        defer { fleet.stop() }
        try fleet.installAudit()
        // GIVEN the database as 33f7b0a..314d64f left it: `v5-write-token` and its column, no
        // claim or addition token
        try fleet.psql(
            """
            DELETE FROM schema_migrations WHERE name IN ('v5-claim-token', 'v6-add-token');
            ALTER TABLE downloads DROP COLUMN claim_token;
            ALTER TABLE downloads DROP COLUMN add_token;
            ALTER TABLE downloads ADD COLUMN write_token TEXT;
            INSERT INTO schema_migrations (name, applied_at) VALUES ('v5-write-token', extract(epoch FROM clock_timestamp()));
            """)
        // WHEN this build opens it
        let listed = try HaulBinary.run(["queue", "list", "--state", fleet.uri("upgraded")])
        // THEN it works (migrating what it must)
        #expect(listed.status == 0, "status \(listed.status): \(listed.stderr)")
    }
}
