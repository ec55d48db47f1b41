import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Test servers never outlive the test process", .serialized)
struct ServersLeftAtExitTests {
    @Test(
        "GIVEN an nginx whose fixture is never released (a test abandoned at its time limit) WHEN the process exits THEN the exit hook stops it; one stopped by its owner is not noted",
        .timeLimit(.minutes(1))
    )
    func anAbandonedNginxIsStoppedAtExit() throws {
        let root = try TemporaryDirectory(prefix: "haul-left-at-exit")
        let abandoned = try NginxServer(documentRoot: root.path)
        let released = try NginxServer(documentRoot: root.path)
        #expect(ServersLeftAtExit.isNoted(abandoned.pid) && ServersLeftAtExit.isNoted(released.pid))

        released.stop()
        #expect(!ServersLeftAtExit.isNoted(released.pid))

        // What the hook installed with atexit does for every server still noted.
        ServersLeftAtExit.stopNoted(abandoned.pid)
        #expect(kill(abandoned.pid, 0) == -1 && errno == ESRCH, "nginx \(abandoned.pid) still runs")
        #expect(!ServersLeftAtExit.isNoted(abandoned.pid))
        abandoned.stop()
    }

    @Test(
        "GIVEN a SOCKS and an HTTP proxy whose fixtures are never released WHEN the process exits THEN the exit hook stops both; one stopped by its owner is not noted",
        .timeLimit(.minutes(1))
    )
    func abandonedProxiesAreStoppedAtExit() throws {
        let socks = try SocksProxy()
        let http = try HTTPProxy()
        #expect(ServersLeftAtExit.isNoted(socks.pid) && ServersLeftAtExit.isNoted(http.pid))

        http.stop()
        #expect(!ServersLeftAtExit.isNoted(http.pid))

        ServersLeftAtExit.stopNoted(socks.pid)
        #expect(kill(socks.pid, 0) == -1 && errno == ESRCH, "microsocks \(socks.pid) still runs")
        socks.stop()
    }

    @Test(
        "GIVEN a PostgreSQL cluster whose fixture is never released (pg_ctl detaches its server) WHEN the process exits THEN the exit hook stops the server",
        .timeLimit(.minutes(2))
    )
    func anAbandonedPostgresServerIsStoppedAtExit() throws {
        let cluster = try PostgresCluster()
        let pid = try #require(cluster.serverPID)
        #expect(ServersLeftAtExit.isNoted(pid))

        ServersLeftAtExit.stopNoted(pid)
        #expect(kill(pid, 0) == -1 && errno == ESRCH, "postgres \(pid) still runs")
        cluster.stop()
        #expect(!ServersLeftAtExit.isNoted(pid))
    }

    @Test(
        "GIVEN a PostgreSQL cluster to be removed at exit, as the shared one is WHEN the process exits THEN the exit hook stops its server and removes its directory",
        .timeLimit(.minutes(2))
    )
    func aClusterRemovedAtExitLeavesNothing() throws {
        // A private cluster: the hook run on the shared one would pull it from under other tests.
        let cluster = try PostgresCluster()
        defer { cluster.stop() }
        cluster.removeAtExit()
        let pid = try #require(cluster.serverPID)

        ServersLeftAtExit.stopNoted(pid)
        #expect(kill(pid, 0) == -1 && errno == ESRCH, "postgres \(pid) still runs")
        #expect(!FileManager.default.fileExists(atPath: cluster.directory), "\(cluster.directory) is still there")
        #expect(!ServersLeftAtExit.isNoted(pid))
    }

    @Test("GIVEN a fresh test database WHEN it is created THEN it lives in the cluster the test process shares, whose server the exit hook will stop")
    func theSharedClusterIsRemovedAtExit() throws {
        let database = try PostgresTestDatabase()
        defer { database.drop() }
        let pid = try #require(try PostgresCluster.shared().serverPID)
        #expect(ServersLeftAtExit.isNoted(pid))
        #expect(try database.psql("SELECT current_database()") == database.name)
    }
}
