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
    @Test(.timeLimit(.minutes(1)))
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

        // THEN the server refused at most one extra connection, not seven
        #expect(afterFirst <= 1, "\(afterFirst) refused requests: \(nginx.accessLog().map { "\($0.status) \($0.range ?? "-")" })")
        #expect(Disk.exists(output + ".haul-partial"), "stderr: \(first.stderr)")

        // WHEN it runs again for 3 s (a resume from the record) and is stopped again
        let second = try RunningHaul(arguments)
        Thread.sleep(forTimeInterval: 3)
        second.send(SIGINT)
        _ = try second.wait(timeout: 20)

        // THEN the refusal was remembered: no extra connection was asked for again
        #expect(refusals() == afterFirst, "\(nginx.accessLog().map { "\($0.status) \($0.range ?? "-")" })")
    }
}
