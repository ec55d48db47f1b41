import Foundation
import HaulTestSupport
import Testing

/// A speed limit over several downloads of `haul serve`, as a real aria2 client sees it (issue 36,
/// item 7): shared fairly, never standing still, and no piece asked for twice because of it.
@Suite("haul serve's overall limit through aria2p", .serialized)
struct CLIServeSharedLimitTests {
    /// The closed ranges `bytes=a-b` nginx was asked for on `uri`.
    static func closedRanges(_ nginx: NginxServer, _ uri: String) -> [ClosedRange<Int64>] {
        nginx.accessLog().filter { $0.uri == uri }.compactMap { entry in
            guard let range = entry.range, range.hasPrefix("bytes="), !range.hasSuffix("-") else { return nil }
            let bounds = range.dropFirst(6).split(separator: "-").compactMap { Int64($0) }
            guard bounds.count == 2, bounds[0] <= bounds[1] else { return nil }
            return bounds[0]...bounds[1]
        }
    }

    @Test(.timeLimit(.minutes(3)))
    func twoDownloadsUnderAnOverallLimitEachMoveEverySecondWithAFairShare() throws {
        // GIVEN haul serve and nginx serving two 64 MiB files as fast as loopback allows
        let python = try CLIServeClientTests.python()
        let work = try TemporaryDirectory(prefix: "haul-serve-shared-limit")
        let nginx = try ServedFiles.start(in: work, [("a.bin", 64 << 20, 3701), ("b.bin", 64 << 20, 3702)], limitRate: "1m")
        defer { nginx.stop() }
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { _ = try? serve.stop() }

        // WHEN aria2p sets an overall limit of 256 KiB/s, adds both and watches them for 10 s
        let result = try ProcessRunner.run(
            python,
            [
                CLIServeClientTests.script("Tests/RPC/aria2p_limit_check.py"), "--port", String(serve.port), "--secret", serve.secret,
                "--url", nginx.baseURL + "/a.bin", "--url", nginx.baseURL + "/b.bin", "--limit", String(256 << 10), "--seconds", "10",
            ], timeout: 120)

        // THEN both moved within every second, each with about half the limit, their speeds measured
        #expect(result.status == 0, "aria2p check failed:\n\(result.stderr)\n\(result.stdoutString)")
        // AND no byte range was asked for twice: no piece given up and asked for again
        for uri in ["/a.bin", "/b.bin"] {
            let asked = Self.closedRanges(nginx, uri).sorted { $0.lowerBound < $1.lowerBound }
            for (before, after) in zip(asked, asked.dropFirst()) {
                #expect(!before.overlaps(after), "\(uri): \(before) and \(after) both asked for; all: \(asked)")
            }
        }
    }
}
