import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Fleets of wide runs (`-j 64`): their workers' claims are made together, and their idle
/// workers look again every 0.2 s while others' items run.
@Suite("CLI fleet: -j 64 workers", .serialized)
struct CLIFleetSixtyFourTests {
    @Test(
        "GIVEN 150 small files and a -j 64 worker stopped by SIGINT soon after it starts WHEN two -j 64 workers then run the queue THEN the stopped one exits with nothing left leased, and every item is completed once, bit-exact"
    )
    func wideWorkersStoppedAndRunAgainCompleteEveryItemOnce() throws {
        let fleet = try FleetFixture()
        defer { fleet.stop() }
        let names = try fleet.makeFiles(150, size: 2_000...20_000)
        try fleet.add(names)

        let stopped = try FleetWorker("stopped", fixture: fleet, jobs: 64)
        Thread.sleep(forTimeInterval: 0.4)
        stopped.send(SIGINT)
        let stoppedStatus = try stopped.wait(timeout: 30)
        #expect(stoppedStatus != 128 + SIGKILL, "it did not stop on SIGINT")
        #expect(try fleet.count("SELECT count(*) FROM downloads WHERE state NOT IN ('queued', 'completed')") == 0, "left leased after the stop")

        let started = Date()
        let workers = try ["a", "b"].map { try FleetWorker($0, fixture: fleet, jobs: 64) }
        for worker in workers {
            let status = try worker.wait(timeout: 60)
            #expect(status == 0, "\(worker.name): \(worker.stderr)")
        }
        let seconds = Date().timeIntervalSince(started)
        fleet.expectFilesExact()
        #expect(try fleet.count("SELECT count(*) FROM downloads WHERE state = 'completed'") == 150)
        #expect(try fleet.completedTwice() == 0)
        #expect(seconds < 20, "the fleet took \(seconds) s")
    }
}
