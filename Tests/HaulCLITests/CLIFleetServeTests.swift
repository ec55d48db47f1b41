import Foundation
import HaulTestSupport
import Testing

/// `haul serve` on a shared store (issue 23.7): several servers show the same downloads under the
/// same GIDs, and each runs its own share of them.
@Suite("CLI fleet: haul serve on PostgreSQL", .serialized)
struct CLIFleetServeTests {
    @Test("GIVEN two servers on one PostgreSQL store WHEN downloads are added through one THEN both show them under the same GIDs, and each is done once")
    func twoServersOneQueue() throws {
        let fleet = try FleetFixture(limitRate: "300k")
        defer { fleet.stop() }
        let names = try fleet.makeFiles(6, size: 350_000...450_000)
        try fleet.installAudit()
        // One download at a time each: while one server is busy, the other takes the next.
        let first = try ServeProcess(state: fleet.uri("serve1"), directory: fleet.output, extra: ["-j", "1"])
        defer { _ = try? first.stop() }
        let second = try ServeProcess(state: fleet.uri("serve2"), directory: fleet.output, extra: ["-j", "1"])
        defer { _ = try? second.stop() }
        let gids = try names.map { name in
            try #require(try first.result("aria2.addUri", [[fleet.nginx.baseURL + "/limited/" + name]]) as? String)
        }
        // The second server knows each download by the GID the first one gave it.
        for gid in gids {
            let status = try #require(try second.result("aria2.tellStatus", [gid, ["gid", "status"]]) as? [String: Any])
            #expect(status["gid"] as? String == gid)
        }
        let done = eventually(60) {
            gids.allSatisfy { gid in
                ((try? second.result("aria2.tellStatus", [gid, ["status"]])) as? [String: Any])?["status"] as? String == "complete"
            }
        }
        #expect(done)
        let stoppedFirst = try #require(try first.result("aria2.tellStopped", [0, 100, ["gid"]]) as? [[String: Any]])
        let stoppedSecond = try #require(try second.result("aria2.tellStopped", [0, 100, ["gid"]]) as? [[String: Any]])
        #expect(Set(stoppedFirst.compactMap { $0["gid"] as? String }) == Set(gids))
        #expect(Set(stoppedSecond.compactMap { $0["gid"] as? String }) == Set(gids))
        fleet.expectFilesExact()
        #expect(try fleet.count("SELECT count(DISTINCT app) FROM audit WHERE new_epoch > old_epoch") == 2, "both servers ran downloads")
        #expect(try fleet.completedTwice() == 0)
        #expect(try fleet.foreignWrites() == 0)
    }

    @Test("GIVEN haul serve --max-per-host 1 -j 5 on a shared store WHEN three downloads of one host are added THEN nginx serves them one at a time")
    func serveHonoursTheHostLimit() throws {
        let fleet = try FleetFixture(limitRate: "150k")
        defer { fleet.stop() }
        let names = try fleet.makeFiles(3, size: 280_000...320_000)
        let serve = try ServeProcess(state: fleet.uri("serve"), directory: fleet.output, extra: ["--max-per-host", "1", "-j", "5"])
        defer { _ = try? serve.stop() }
        let gids = try names.map { name in
            try #require(try serve.result("aria2.addUri", [[fleet.nginx.baseURL + "/limited/" + name]]) as? String)
        }
        #expect(
            eventually(60) {
                gids.allSatisfy { gid in
                    ((try? serve.result("aria2.tellStatus", [gid, ["status"]])) as? [String: Any])?["status"] as? String == "complete"
                }
            })
        fleet.expectFilesExact()
        #expect(fleet.nginx.requestIntervals().count == 3)
        #expect(fleet.nginx.maxConcurrentRequests(matching: "/limited/") == 1)
    }
}
