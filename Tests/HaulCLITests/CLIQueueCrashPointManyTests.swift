import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A batch of many small files run by eight workers (their claims made together, one commit for
/// several) that dies right after one of its commits: the same command run again completes every
/// file bit-exact, each item completed once, nothing left behind.
@Suite("haul queue crash points, -j 8 of many small files")
struct CLIQueueCrashPointManyTests {
    static let files = 40
    static let commits = [1, 2, 3, 4, 5, 6, 8, 11, 15, 20]

    @Test(
        "GIVEN forty small files run with -j 8 WHEN the batch dies right after its N-th queue commit THEN the same command again completes every file bit-exact, the queue shows each completed, and nothing is left behind",
        .timeLimit(.minutes(1)), arguments: commits)
    func manySmallFilesRecoverFromACrashAfterCommit(_ commit: Int) throws {
        let server = try FaultServer()
        defer { server.stop() }
        let bodies = (0..<Self.files).map { TestData.bytes(count: 4_096 + $0 * 37, seed: 9_100 + UInt64(commit * 64 + $0)) }
        let paths = (0..<Self.files).map { "/m\($0).bin" }
        for (path, body) in zip(paths, bodies) { server.setResource(path, body: body) }
        let work = try TemporaryDirectory(prefix: "haul-cli-queue-crash-many")
        let out = work.file("out")
        let arguments = ["-q", "--retry", "0", "--state", work.file("state"), "-j", "8", "-d", out] + paths.map(server.url)
        let step = "between-queue-commits:\(commit)"

        let crashed = try HaulBinary.run(arguments, environment: ["HAUL_TEST_CRASH_AT": step])
        #expect(crashed.status == 128 + SIGKILL, "\(step): the crash point was not reached (status \(crashed.status), stderr: \(crashed.stderr))")

        let next = try HaulBinary.run(arguments)
        #expect(next.status == 0, "\(step): stderr: \(next.stderr)")
        for (path, body) in zip(paths, bodies) {
            #expect(Disk.difference(out + path, body) == nil, "\(step): \(path)")
        }
        let leftovers = CLIQueueCrashPointTests.leftovers(in: out)
        #expect(leftovers.isEmpty, "\(step): left behind: \(leftovers)")
        let listing = try StoreFixture(directory: work.file("state")).items()
        #expect(listing.count(state: "completed") == Self.files, "\(step): \(listing.values)")
    }
}
