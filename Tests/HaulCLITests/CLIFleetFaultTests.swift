import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A fleet when things go wrong: a worker stopped past its lease, the database restarted mid-run.
@Suite("CLI fleet faults on PostgreSQL", .serialized)
struct CLIFleetFaultTests {
    @Test(
        "GIVEN a worker stopped (SIGSTOP) past its lease WHEN another rescues the item and the first is continued THEN the first writes nothing more and the item completes once, bit-exact"
    )
    func stoppedWorkerIsFenced() throws {
        let fleet = try FleetFixture(limitRate: "400k")
        defer { fleet.stop() }
        let names = try fleet.makeFiles(1, size: 1_400_000...1_400_000)
        try fleet.add(names, path: "/limited/")
        let stopped = try FleetWorker("stopped", fixture: fleet, jobs: 1, leaseSeconds: 2)
        #expect(try eventually(10) { try fleet.count("SELECT bytes FROM downloads") > 0 })
        stopped.send(SIGSTOP)
        #expect(try eventually(10) { try fleet.count("SELECT count(*) FROM downloads WHERE lease_expires < now()") == 1 })
        let rescuer = try FleetWorker("rescuer", fixture: fleet, jobs: 1, leaseSeconds: 2)
        // The rescuer claims the item; the stopped worker still holds its destination, so it goes back.
        #expect(try eventually(10) { try fleet.count("SELECT attempts FROM downloads") >= 2 })
        let claimsBeforeContinue = try fleet.count("SELECT count(*) FROM audit WHERE new_epoch > old_epoch")
        stopped.send(SIGCONT)
        #expect(try stopped.wait() == 0, "stopped: \(stopped.stderr)")
        #expect(try rescuer.wait() == 0, "rescuer: \(rescuer.stderr)")
        fleet.expectFilesExact()
        #expect(try fleet.count("SELECT count(*) FROM downloads WHERE state = 'completed'") == 1)
        #expect(claimsBeforeContinue >= 2)
        #expect(try fleet.psql("SELECT app FROM audit WHERE new_epoch = 1 AND old_epoch = 0") == "stopped")
        #expect(try fleet.foreignWrites() == 0, "a worker wrote to an item another held")
        #expect(try fleet.completedTwice() == 0)
        // Its first lease was the stopped worker's, and nothing it wrote under it came after the rescue.
        let staleAfterRescue = try fleet.count(
            """
            SELECT count(*) FROM audit w WHERE w.app = 'stopped' AND w.new_epoch = 1
                AND w.seq > (SELECT min(seq) FROM audit WHERE new_epoch = 2)
            """)
        #expect(staleAfterRescue == 0)
    }

    @Test("GIVEN two workers mid-run WHEN PostgreSQL restarts THEN they reconnect with backoff and finish every item once, bit-exact")
    func databaseRestart() throws {
        // nginx sends a second's worth at once (limit_rate), then the rest at the rate: each file
        // takes 0.25-0.75 s whatever the workers' speed, so the run lasts about 5 s and the restart
        // comes mid-run. (At 1m, a whole file went in the first burst: a fast enough run was over
        // before the restart.)
        let fleet = try FleetFixture(limitRate: "200k")
        defer { fleet.stop() }
        let names = try fleet.makeFiles(40, size: 250_000...350_000)
        try fleet.add(names, path: "/limited/")
        let workers = try ["w1", "w2"].map { try FleetWorker($0, fixture: fleet, jobs: 2) }
        #expect(try eventually(30) { try fleet.count("SELECT count(*) FROM downloads WHERE state = 'completed'") >= 6 })
        fleet.cluster.stopServer()
        Thread.sleep(forTimeInterval: 1.5)
        try fleet.cluster.start()
        let completedAtRestart = try fleet.count("SELECT count(*) FROM downloads WHERE state = 'completed'")
        #expect(completedAtRestart < 40, "the restart came mid-run")
        for worker in workers { #expect(try worker.wait() == 0, "\(worker.name): \(worker.stderr)") }
        fleet.expectFilesExact()
        #expect(try fleet.count("SELECT count(*) FROM downloads WHERE state = 'completed'") == 40)
        #expect(Set(workers.flatMap(\.completed)).count == 40)
        #expect(try fleet.foreignWrites() == 0)
        #expect(try fleet.completedTwice() == 0)
    }

    @Test(
        "GIVEN --max-per-host 2 on two workers of four jobs each WHEN they drain one host's files THEN nginx never serves more than two at once, and does serve two"
    )
    func perHostLimitAcrossWorkers() throws {
        // nginx sends a second's worth at once (limit_rate), so each file is twice the rate: ~1 s.
        let fleet = try FleetFixture(limitRate: "150k")
        defer { fleet.stop() }
        let names = try fleet.makeFiles(8, size: 280_000...320_000)
        try fleet.add(names, path: "/limited/")
        let workers = try ["w1", "w2"].map { try FleetWorker($0, fixture: fleet, jobs: 4, extra: ["--max-per-host", "2"]) }
        for worker in workers { #expect(try worker.wait() == 0, "\(worker.name): \(worker.stderr)") }
        fleet.expectFilesExact()
        let intervals = fleet.nginx.requestIntervals()
        #expect(intervals.count == 8)
        #expect(intervals.allSatisfy { $0.end - $0.start > 0.5 }, "each request took time: \(intervals)")
        // Eight jobs could have fetched all eight at once; the claim let two run.
        #expect(fleet.nginx.maxConcurrentRequests(matching: "/limited/") == 2)
        #expect(Set(workers.flatMap(\.completed)).count == 8)
    }
}
