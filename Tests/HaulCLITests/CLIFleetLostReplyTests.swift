import Foundation
import HaulTestSupport
import Testing

/// A worker whose database connection is cut right after a claim's COMMIT reached the server: the
/// claim committed, its reply never arrived. Between the worker and PostgreSQL, a relay that cuts
/// the connection there.
@Suite("CLI fleet: a claim whose COMMIT reply was lost", .serialized)
struct CLIFleetLostReplyTests {
    @Test(
        "GIVEN a queue run whose first claim's COMMIT reply is lost (one worker, or eight whose claims are made together) WHEN it runs with a 2 s lease THEN it ends, every item completed once and bit-exact, none left running",
        arguments: [(files: 4, jobs: 1, timeout: 40.0), (files: 24, jobs: 8, timeout: 60.0)])
    func aLostClaimReplyStrandsNothing(files: Int, jobs: Int, timeout: Double) throws {
        let fleet = try FleetFixture()
        defer { fleet.stop() }
        let names = try fleet.makeFiles(files, size: 20_000...60_000)
        try fleet.add(names)
        let relay = try TCPRelay(to: fleet.cluster.port)
        defer { relay.stop() }
        relay.set(.cutAfterCommit(following: "SKIP LOCKED"))

        let worker = try FleetWorker("cut\(jobs)", fixture: fleet, jobs: jobs, leaseSeconds: 2, through: relay.port)
        let status = try worker.wait(timeout: timeout)

        #expect(relay.cuts == 1, "the relay cut the first claim's reply")
        #expect(status == 0, "\(worker.stderr)")
        fleet.expectFilesExact()
        #expect(try fleet.count("SELECT count(*) FROM downloads WHERE state = 'completed'") == files)
        #expect(try fleet.count("SELECT count(*) FROM downloads WHERE state <> 'completed'") == 0)
        #expect(try fleet.completedTwice() == 0)
    }
}
