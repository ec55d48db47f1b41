import Foundation
import HaulTestSupport
import Testing

/// `-R` / `--remote-time` (curl's): the finished file takes the server's `Last-Modified` time, for a
/// download run at once and for one added to the queue, which keeps the option until it runs.
@Suite("haul -R: the server's time on the file")
struct CLIRemoteTimeTests {
    @Test(.timeLimit(.minutes(1)))
    func theFileTakesTheServersTimeAtOnceAndThroughTheQueue() throws {
        // GIVEN a server that states a Last-Modified date, and an empty store
        let server = try FaultServer()
        server.setResource("/t.bin", body: TestData.bytes(count: 64_000, seed: 91), lastModified: "Sun, 06 Nov 1994 08:49:37 GMT")
        let store = try StoreFixture()
        let out = try TemporaryDirectory(prefix: "haul-cli-remote-time")

        // WHEN it is downloaded at once with -R, and added to the queue with --remote-time and
        // without it, and the queue runs
        let direct = try HaulBinary.run([server.url("/t.bin"), "-R", "-q", "-o", out.file("direct.bin")])
        let add = try store.haul(["add", server.url("/t.bin"), "--remote-time", "-o", out.file("queued.bin")])
        let addPlain = try store.haul(["add", server.url("/t.bin"), "-o", out.file("plain.bin")])
        let run = try store.haul(["run", "-q", "--retry", "0"])

        // THEN the two asked for have the server's time, the other the time it was written
        for result in [direct, add, addPlain, run] { #expect(result.status == 0, "stderr: \(result.stderr)") }
        #expect(try Self.modified(out.file("direct.bin")) == 784_111_777)
        #expect(try Self.modified(out.file("queued.bin")) == 784_111_777)
        #expect(try Self.modified(out.file("plain.bin")) > Date().timeIntervalSince1970 - 3600)
    }

    private static func modified(_ path: String) throws -> TimeInterval {
        let date = try #require(try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date)
        return date.timeIntervalSince1970
    }
}
