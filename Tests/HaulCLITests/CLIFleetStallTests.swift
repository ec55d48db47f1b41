import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A fleet worker whose database goes away, or stops answering, while one download runs and
/// another's response head arrives (its record must be saved before its body is written): the
/// running transfer keeps its rate throughout, and every item completes once the database is back.
@Suite("CLI fleet: a database that goes away or stops answering stalls no transfer", .serialized)
struct CLIFleetStallTests {
    /// Two downloads for one worker: `a` at 300 KB/s from the start, `b` (2 MiB, so its record is
    /// saved before its body) whose head comes 2 s after its request.
    private struct Setup {
        let fleet: FleetFixture
        let server: FaultServer
        let a = TestData.bytes(count: 3 << 20, seed: 91)
        let b = TestData.bytes(count: 2 << 20, seed: 92)

        init() throws {
            fleet = try FleetFixture()
            server = try FaultServer()
            server.setResource("/a.bin", body: a)
            server.setResource("/b.bin", body: b)
            server.setPersistentFaults("/a.bin", [.throttle(bytesPerSecond: 300_000)])
            server.enqueueFaults("/b.bin", [.combined([.delayHeaders(seconds: 2), .throttle(bytesPerSecond: 300_000)])])
            let added = try HaulBinary.run(["queue", "add", "--state", fleet.uri("adder"), "-d", fleet.output, server.url("/a.bin"), server.url("/b.bin")])
            try #require(added.status == 0, "queue add: \(added.stderr)")
            try fleet.installAudit()
        }

        func stop() {
            server.stop()
            fleet.stop()
        }

        var received: Int64 { Disk.partialBytes(in: fleet.output) }

        func expectFiles() {
            #expect(Disk.difference(fleet.output + "/a.bin", a) == nil)
            #expect(Disk.difference(fleet.output + "/b.bin", b) == nil)
        }
    }

    @Test(.timeLimit(.minutes(2)))
    func aStoppedDatabaseStallsNoTransfer() throws {
        let setup = try Setup()
        defer { setup.stop() }
        // GIVEN a worker downloading a, with b's head due in 2 s
        let worker = try FleetWorker("w", fixture: setup.fleet, jobs: 2, extra: ["-x", "1"])
        #expect(Disk.waitUntil(timeout: 20) { setup.received > 100_000 })
        // WHEN PostgreSQL stops for 4.5 s, and b's head arrives meanwhile
        setup.fleet.cluster.stopServer()
        usleep(2_500_000)
        let before = setup.received
        usleep(1_000_000)
        let during = setup.received - before
        usleep(1_000_000)
        try setup.fleet.cluster.start()
        // THEN a went on at its rate (0 when b's record save waited for the database on the event loop)
        #expect(during > 150_000, "only \(during) bytes arrived in the second after b's head, while the database was down")
        // AND both complete once it is back, bit-exact, each once
        #expect(try worker.wait(timeout: 60) == 0, "\(worker.stderr)")
        setup.expectFiles()
        #expect(try setup.fleet.count("SELECT count(*) FROM downloads WHERE state = 'completed'") == 2)
    }

    @Test(.timeLimit(.minutes(2)))
    func aDatabaseThatStopsAnsweringStallsNoTransfer() throws {
        let setup = try Setup()
        defer { setup.stop() }
        let relay = try TCPRelay(to: setup.fleet.cluster.port)
        defer { relay.stop() }
        // GIVEN a worker downloading a through a relay to its database, with b's head due in 2 s
        let worker = try FleetWorker(
            "w", fixture: setup.fleet, jobs: 2, extra: ["-x", "1"], through: relay.port, environment: ["HAUL_PG_STATEMENT_SECONDS": "3"])
        #expect(Disk.waitUntil(timeout: 20) { setup.received > 100_000 })
        // WHEN the database's replies are held for 5 s, and b's head arrives meanwhile
        relay.set(.hold)
        usleep(2_500_000)
        let before = setup.received
        usleep(1_000_000)
        let during = setup.received - before
        usleep(1_500_000)
        relay.release()
        // THEN a went on at its rate (0 when a store call waited for the answer on the event loop)
        #expect(during > 150_000, "only \(during) bytes arrived in the second after b's head, while the database did not answer")
        // AND both complete once it answers again, bit-exact, each once
        #expect(try worker.wait(timeout: 60) == 0, "\(worker.stderr)")
        setup.expectFiles()
        #expect(try setup.fleet.count("SELECT count(*) FROM downloads WHERE state = 'completed'") == 2)
        #expect(try setup.fleet.completedTwice() == 0)
    }
}
