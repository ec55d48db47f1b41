import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Attacks on "a finish group's completions are settled before they are announced" (0789078):
/// each test here failed on the commit it was written against.
@Suite("finish groups settle first, attacked", .serialized)
struct CLIAttackRound2Tests {
    /// The group's settlement (`DownloadQueue.settleCompleted`) commits `speed = 0` and the final
    /// figures, and only then does the runner publish its last `.progress` (DownloadRunner.finish,
    /// after `FinishGroups.place`). That report is posted to the progress writer, which writes it
    /// (`updateProgress` is fenced by the epoch alone, which a settlement leaves as it is) when the
    /// last write is over a second old: here, because the settlement waited for a store that
    /// another process held locked. The completed row is left with a speed: `queue list` and
    /// aria2's `tellStatus` show a finished download still moving, for good (the worker's own
    /// settlement, which used to come after that report and zero it, is skipped as a conflict).
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
        #expect(Disk.waitUntil(timeout: 20) { CLIStoreStallTests.partialBytes(in: out) > 600_000 })
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
}
