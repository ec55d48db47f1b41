import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Many workers drain one queue on PostgreSQL (issue 23): real processes, a real PostgreSQL, a real nginx.
@Suite("CLI fleet on PostgreSQL", .serialized)
struct CLIFleetTests {
    @Test(
        "GIVEN 200 queued files WHEN three workers with their own homes drain the queue, claiming as many as their jobs, one, or 64 at a time THEN each file is bit-exact and each item was claimed and completed once",
        arguments: [nil, 1, 64]
    )
    func threeWorkersDrain(claimBatch: Int?) throws {
        let fleet = try FleetFixture()
        defer { fleet.stop() }
        let names = try fleet.makeFiles(200, size: 1_000...40_000)
        try fleet.add(names)
        let extra = claimBatch.map { ["--claim-batch", String($0)] } ?? []
        let workers = try ["w1", "w2", "w3"].map { try FleetWorker($0, fixture: fleet, jobs: 2, extra: extra) }
        for worker in workers { #expect(try worker.wait() == 0, "\(worker.name): \(worker.stderr)") }
        fleet.expectFilesExact()
        #expect(try fleet.count("SELECT count(*) FROM downloads WHERE state = 'completed' AND attempts = 1") == 200)
        let reported = workers.flatMap(\.completed)
        #expect(reported.count == 200)
        #expect(Set(reported).count == 200)
        // Shared: a worker started late on a loaded machine may find the last items claimed ahead
        // by the others (64 at a time, the first may hold all it did not run yet).
        let taking = workers.filter { !$0.completed.isEmpty }.count
        #expect(taking >= (claimBatch == 64 ? 1 : 2), "workers that took part: \(workers.map(\.completed.count))")
        let requests = fleet.nginx.accessLog().filter { $0.status == 200 }
        #expect(requests.count == 200)
        #expect(Set(requests.map(\.uri)).count == 200)
        #expect(try fleet.foreignWrites() == 0)
        #expect(try fleet.completedTwice() == 0)
    }

    @Test(
        "GIVEN two workers on slow files WHEN one is killed with kill -9 mid-run THEN the other rescues its items after the lease and finishes them bit-exact")
    func killedWorkerRescued() throws {
        let fleet = try FleetFixture(limitRate: "400k")
        defer { fleet.stop() }
        let names = try fleet.makeFiles(8, size: 500_000...700_000)
        try fleet.add(names, path: "/limited/")
        let doomed = try FleetWorker("doomed", fixture: fleet, jobs: 3, leaseSeconds: 2)
        #expect(try eventually(10) { try fleet.count("SELECT count(*) FROM downloads WHERE state = 'running'") == 3 })
        let survivor = try FleetWorker("survivor", fixture: fleet, jobs: 2, leaseSeconds: 2)
        Thread.sleep(forTimeInterval: 0.5)
        doomed.send(SIGKILL)
        #expect(try doomed.wait() == 128 + SIGKILL)
        let held = try fleet.count("SELECT count(*) FROM downloads WHERE state = 'running' AND lease_worker LIKE '%/\(doomed.pid)'")
        #expect(held == 3, "the killed worker held its three items")
        #expect(try survivor.wait() == 0, "survivor: \(survivor.stderr)")
        fleet.expectFilesExact()
        #expect(try fleet.count("SELECT count(*) FROM downloads WHERE state = 'completed'") == 8)
        #expect(try fleet.count("SELECT count(*) FROM downloads WHERE attempts >= 2") >= 3, "the killed worker's items ran again")
        // Every item reported completed once, by one of them; the survivor did the killed one's three.
        #expect((survivor.completed + doomed.completed).sorted() == Array(Set(survivor.completed + doomed.completed)).sorted())
        #expect(Set(survivor.completed + doomed.completed).count == 8)
        #expect(survivor.completed.count >= 5)
        #expect(try fleet.foreignWrites() == 0)
        #expect(try fleet.completedTwice() == 0)
    }

    @Test(
        """
        GIVEN three workers draining 150 small files WHEN the last item is settled \
        THEN every worker ends within a second of it, not at its next two-second look for work
        """)
    func workersEndSoonAfterTheLastItem() throws {
        let fleet = try FleetFixture()
        defer { fleet.stop() }
        let names = try fleet.makeFiles(150, size: 16_384...16_384)
        try fleet.add(names)
        let workers = try ["w1", "w2", "w3"].map { try FleetWorker($0, fixture: fleet, jobs: 4) }
        for worker in workers { #expect(try worker.wait() == 0, "\(worker.name): \(worker.stderr)") }
        let ended = Date().timeIntervalSince1970
        // The server's clock is this machine's: the last settlement's time against the workers' end.
        let lastSettled = Double(try fleet.psql("SELECT max(updated_at) FROM downloads").trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(ended - lastSettled < 1.0, "the workers ended \(ended - lastSettled) s after the last settlement")
        fleet.expectFilesExact()
        #expect(try fleet.count("SELECT count(*) FROM downloads WHERE state = 'completed'") == 150)
    }
}
