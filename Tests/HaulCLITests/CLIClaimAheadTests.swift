import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Items a run claimed ahead (`--claim-batch`): leased and held, not started, while other
/// processes pause or cancel them.
@Suite("haul queue run: items claimed ahead", .serialized)
struct CLIClaimAheadTests {
    @Test(
        """
        GIVEN a run of one job that claimed four items ahead, the first downloading slowly \
        WHEN another process pauses the third and cancels the fourth THEN neither is downloaded: \
        the third ends paused and the fourth cancelled, and the second completes
        """,
        .timeLimit(.minutes(1)))
    func aPauseOrCancelOfAnItemHeldAheadReachesItBeforeItRuns() throws {
        let server = try FaultServer()
        let slow = TestData.bytes(count: 400_000, seed: 380)
        server.setResource("/a0.bin", body: slow)
        server.setPersistentFaults("/a0.bin", [.throttle(bytesPerSecond: 100_000)])
        let bodies = (1..<4).map { TestData.bytes(count: 20_000, seed: 380 + UInt64($0)) }
        for (index, body) in bodies.enumerated() { server.setResource("/a\(index + 1).bin", body: body) }
        let store = try StoreFixture()
        let out = try TemporaryDirectory(prefix: "haul-cli-ahead")
        let added = try store.haul(["add"] + (0..<4).map { server.url("/a\($0).bin") } + ["-d", out.path])
        let ids = StoreFixture.ids(added)
        try #require(ids.count == 4, "add: \(added.stderr)")
        var environment = ProcessInfo.processInfo.environment
        environment["HAUL_LEASE_SECONDS"] = "3"
        let run = try RunningHaul(
            ["queue", "run", "-q", "-j", "1", "--claim-batch", "4", "--retry", "0", "--state", store.path], environment: environment)
        // All four leased by the one claim, the first transferring.
        #expect(try eventually(10) { try store.items().values.allSatisfy { $0["state"] as? String == "running" } })

        #expect(try store.haul(["pause", String(ids[2])]).status == 0)
        #expect(try store.haul(["cancel", String(ids[3])]).status == 0)

        #expect(try run.wait(timeout: 30) == .exited(0), "run: \(run.stderr)")
        let items = try store.items()
        #expect(items.state(ids[0]) == "completed")
        #expect(items.state(ids[1]) == "completed")
        #expect(items.state(ids[2]) == "paused")
        #expect(items.state(ids[3]) == "cancelled")
        #expect(Disk.difference(out.file("a1.bin"), bodies[0]) == nil)
        let asked = server.requests.map(\.path)
        #expect(!asked.contains("/a2.bin") && !asked.contains("/a3.bin"), "requests: \(asked)")
        // Nothing of theirs on disk: not even a partial.
        let left = try FileManager.default.contentsOfDirectory(atPath: out.path).filter { !$0.hasPrefix(".haul-lock") }.sorted()
        #expect(left == ["a0.bin", "a1.bin"], "left: \(left)")
        #expect(Disk.difference(out.file("a0.bin"), slow) == nil)
    }

    @Test(
        """
        GIVEN a run of one job that claimed three items ahead, the first downloading slowly \
        WHEN the lease of the third is taken over by another live owner (as after this process hung past its lease) \
        THEN the run never downloads the third: it passes it over, and it stays the other owner's
        """,
        .timeLimit(.minutes(1)))
    func anItemHeldAheadWhoseLeaseWasTakenOverIsPassedOver() throws {
        let server = try FaultServer()
        let slow = TestData.bytes(count: 400_000, seed: 390)
        server.setResource("/b0.bin", body: slow)
        server.setPersistentFaults("/b0.bin", [.throttle(bytesPerSecond: 100_000)])
        let bodies = (1..<3).map { TestData.bytes(count: 20_000, seed: 390 + UInt64($0)) }
        for (index, body) in bodies.enumerated() { server.setResource("/b\(index + 1).bin", body: body) }
        let store = try StoreFixture()
        let out = try TemporaryDirectory(prefix: "haul-cli-ahead")
        let added = try store.haul(["add"] + (0..<3).map { server.url("/b\($0).bin") } + ["-d", out.path])
        let ids = StoreFixture.ids(added)
        try #require(ids.count == 3, "add: \(added.stderr)")
        var environment = ProcessInfo.processInfo.environment
        environment["HAUL_LEASE_SECONDS"] = "3"
        let run = try RunningHaul(
            ["queue", "run", "-q", "-j", "1", "--claim-batch", "3", "--retry", "0", "--state", store.path], environment: environment)
        #expect(try eventually(10) { try store.items().values.allSatisfy { $0["state"] as? String == "running" } })

        // Another owner, alive (this test process), holds the third now, under a new epoch.
        let boot = (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        try StoreSurgery.execute(
            "UPDATE downloads SET lease_owner = '\(boot)|\(getpid())|other', lease_epoch = lease_epoch + 1, lease_expires = lease_expires + 3600 WHERE id = \(ids[2])",
            in: store.path)

        #expect(try run.wait(timeout: 30) == .exited(0), "run: \(run.stderr)")
        let items = try store.items()
        #expect(items.state(ids[0]) == "completed")
        #expect(items.state(ids[1]) == "completed")
        #expect(items.state(ids[2]) == "running")
        let asked = server.requests.map(\.path)
        #expect(!asked.contains("/b2.bin"), "requests: \(asked)")
        #expect(!Disk.exists(out.file("b2.bin")))
    }

    @Test(
        "GIVEN --claim-batch with 0, a negative, a fraction, 1025 or a word WHEN a queue run is asked THEN it is refused as bad usage (exit 2) with the range, and nothing runs",
        arguments: ["0", "-3", "1.5", "1025", "many"])
    func aClaimBatchOutOfRangeIsRefused(value: String) throws {
        let store = try StoreFixture()
        let result = try store.haul(["run", "--claim-batch", value])
        #expect(result.status == 2, "stderr: \(result.stderr)")
        #expect(result.stderr.contains("--claim-batch needs a whole number from 1 to 1024"), "stderr: \(result.stderr)")
    }
}
