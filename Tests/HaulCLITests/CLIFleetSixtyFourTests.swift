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
        "GIVEN 400 small files and a -j 64 worker stopped by SIGINT once its first five items are done WHEN two -j 64 workers then run the queue THEN the stopped one exits with nothing left leased, and every item is completed once, bit-exact"
    )
    func wideWorkersStoppedAndRunAgainCompleteEveryItemOnce() throws {
        let fleet = try FleetFixture()
        defer { fleet.stop() }
        let names = try fleet.makeFiles(400, size: 20_000...80_000)
        try fleet.add(names)

        let stopped = try FleetWorker("stopped", fixture: fleet, jobs: 64)
        // Stopped once its first items are done, while most are still to run.
        let deadline = Date().addingTimeInterval(20)
        while (try? fleet.count("SELECT count(*) FROM downloads WHERE state = 'completed'")) ?? 0 < 5, Date() < deadline {
            Thread.sleep(forTimeInterval: 0.01)
        }
        stopped.send(SIGINT)
        let stoppedStatus = try stopped.wait(timeout: 30)
        #expect(stoppedStatus != 128 + SIGKILL, "it did not stop on SIGINT")
        #expect(try fleet.count("SELECT count(*) FROM downloads WHERE state NOT IN ('queued', 'completed')") == 0, "left leased after the stop")
        let completedBeforeTheStop = try fleet.count("SELECT count(*) FROM downloads WHERE state = 'completed'")
        #expect(completedBeforeTheStop < 400, "the stop came after the last item: nothing was stopped")

        let started = Date()
        let workers = try ["a", "b"].map { try FleetWorker($0, fixture: fleet, jobs: 64) }
        for worker in workers {
            let status = try worker.wait(timeout: 60)
            #expect(status == 0, "\(worker.name): \(worker.stderr)")
        }
        let seconds = Date().timeIntervalSince(started)
        fleet.expectFilesExact()
        #expect(try fleet.count("SELECT count(*) FROM downloads WHERE state = 'completed'") == 400)
        #expect(try fleet.completedTwice() == 0)
        #expect(seconds < 30, "the fleet took \(seconds) s")
    }
}
