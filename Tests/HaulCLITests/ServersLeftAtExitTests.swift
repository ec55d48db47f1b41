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
}
