import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The default connection count grows one step at a time while each step adds throughput, and a
/// host that refused an extra connection is not asked for one again in that download, not after a
/// stop and a new run either (issue 36, item 12).
@Suite("haul's adaptive connections against nginx", .serialized)
struct CLIAdaptiveConnectionsTests {
    @Test(.timeLimit(.minutes(2)))
    func aServerAllowingOneConnectionIsAskedForASecondOnceInTheWholeDownload() throws {
        // GIVEN nginx serving a 64 MiB file at 4 MiB/s to one connection per client (limit_conn 1)
        let work = try TemporaryDirectory(prefix: "haul-cli-adaptive")
        let nginx = try ServedFiles.start(in: work, [("big.bin", 64 << 20, 3612)], limitRate: "4m")
        let uri = "/oneconn/big.bin"
        let output = work.file("big.bin")
        let arguments = ["-o", output, nginx.baseURL + uri]
        func refusals() -> Int { nginx.accessLog().filter { $0.uri == uri && $0.status == 503 }.count }

        // WHEN haul runs with its default for 3 s and is stopped
        let first = try RunningHaul(arguments)
        Thread.sleep(forTimeInterval: 3)
        first.send(SIGINT)
        _ = try first.wait(timeout: 20)
        let afterFirst = refusals()

        // THEN the server refused at most one extra connection, not seven, and the first
        // connection went on with its response instead of being cut and asked again
        let served = nginx.accessLog().filter { $0.uri == uri && $0.status != 503 }
        #expect(afterFirst <= 1, "\(afterFirst) refused requests: \(nginx.accessLog().map { "\($0.status) \($0.range ?? "-")" })")
        #expect(served.count == 1, "\(nginx.accessLog().map { "\($0.status) \($0.range ?? "-")" })")
        #expect(Disk.exists(output + ".haul-partial"), "stderr: \(first.stderr)")

        // WHEN it runs again for 3 s (a resume from the record) and is stopped again
        let second = try RunningHaul(arguments)
        Thread.sleep(forTimeInterval: 3)
        second.send(SIGINT)
        _ = try second.wait(timeout: 20)

        // THEN the refusal was remembered: no extra connection was asked for again
        #expect(refusals() == afterFirst, "\(nginx.accessLog().map { "\($0.status) \($0.range ?? "-")" })")

        // WHEN it runs a third time, to the end
        let last = try HaulBinary.run(arguments, timeout: 40)

        // THEN the file is whole, and each run went on where the last one stopped: the second
        // run's bytes (fetched over one connection, the record holding the first run's segments)
        // were not fetched again (nginx sent the file once, give or take what a stop leaves in
        // the sockets)
        #expect(last.status == 0, "stderr: \(last.stderr)")
        #expect(Disk.size(output) == 64 << 20)
        _ = Disk.waitUntil(timeout: 3) { nginx.accessLog().filter { $0.uri == uri }.count >= 4 }
        let sent = nginx.accessLog().filter { $0.uri == uri }.reduce(0) { $0 + $1.bodyBytesSent }
        #expect(sent < (64 << 20) + (6 << 20), "nginx sent \(sent) bytes: \(nginx.accessLog().map { "\($0.status) \($0.bodyBytesSent) \($0.range ?? "-")" })")
    }

    @Test(.timeLimit(.minutes(1)))
    func theFirstConnectionKeepsItsResponseWhenTheSecondIsRefused() throws {
        // GIVEN nginx serving a 24 MiB file at 8 MiB/s to one connection per client
        let work = try TemporaryDirectory(prefix: "haul-cli-adaptive-keep")
        let nginx = try ServedFiles.start(in: work, [("f.bin", 24 << 20, 3613)], limitRate: "8m")
        let uri = "/oneconn/f.bin"
        let output = work.file("f.bin")

        // WHEN haul fetches it with its default
        let result = try HaulBinary.run(["-q", "-o", output, nginx.baseURL + uri], timeout: 30)

        // THEN the file is whole, and besides the one refused request there was one: the first
        // connection's response went on past where the refused connection would have started
        // (it was cut there and the rest asked for again)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.size(output) == 24 << 20)
        let log = nginx.accessLog().filter { $0.uri == uri }
        #expect(log.filter { $0.status == 503 }.count <= 1, "\(log.map { "\($0.status) \($0.range ?? "-")" })")
        #expect(log.filter { $0.status != 503 }.count == 1, "\(log.map { "\($0.status) \($0.range ?? "-")" })")
    }
}
