import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `haul serve`'s file route under a hostile review, against a real server.
@Suite("haul serve: the file route under attack", .serialized)
struct CLIServeStreamAttackTests {
    /// The descriptors `pid` has open, by number.
    static func openDescriptors(_ pid: Int32) throws -> [Int] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").compactMap { Int($0) }.sorted()
    }

    @Test(.timeLimit(.minutes(2)))
    func aServerOutOfDescriptorsAnswers503NotThatTheFileIsGone() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-emfile")
        let nginx = try ServedFiles.start(in: work, [("a.bin", 100_000, 1)], limitRate: "64k")
        defer { nginx.stop() }
        // GIVEN haul serve with a finished download
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { CLIServeAttackTests.kill(serve) }
        let gid = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/a.bin"]]) as? String)
        try CLIServeRoutesTests.waitFor(serve, gid, status: "complete")
        let pid = serve.running.process.processIdentifier
        let url = serve.base + "/haul/file/" + gid
        usleep(300_000)
        // WHEN it runs out of descriptors (its soft limit lowered to about what it has open, so
        // that some request finds a socket but no descriptor for the file), as under a flood of
        // downloads on a system with a low limit
        let used = try Self.openDescriptors(pid).count
        var statuses: [Int32: String] = [:]
        for limit in Int32(max(4, used - 8))...Int32(used + 3) {
            let lowered = try ProcessRunner.run("/usr/bin/prlimit", ["--pid", String(pid), "--nofile=\(limit):"])
            #expect(lowered.status == 0, "\(lowered.stderr)")
            let answer = try Curl.run(["-s", "--max-time", "3", "-o", "/dev/null", "-w", "%{http_code}", "-H", "X-Haul-Token: \(serve.secret)", url])
            statuses[limit] = answer.stdoutString
        }
        _ = try ProcessRunner.run("/usr/bin/prlimit", ["--pid", String(pid), "--nofile=20000:"])
        // THEN no answer says the file is gone (410, permanent): a shortage is 503 (try again)
        #expect(!statuses.values.contains("410"), "statuses by limit: \(statuses.sorted { $0.key < $1.key })")
        #expect(statuses.values.contains("503"), "statuses by limit: \(statuses.sorted { $0.key < $1.key })")
        // AND once descriptors are free again the file is served
        #expect(try CLIServeRoutesTests.fetch(url, ["-H", "X-Haul-Token: \(serve.secret)"]).status == 200)
    }
}
