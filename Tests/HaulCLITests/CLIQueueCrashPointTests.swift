import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A batch that dies between two commits of the queue's database (as `kill -9` would, through the
/// test-only `HAUL_TEST_CRASH_AT=between-queue-commits:N` switch): the same command run again, with
/// no manual action, finishes every file bit-exact and leaves nothing behind.
@Suite("haul queue crash points")
struct CLIQueueCrashPointTests {
    /// Every commit of a normal run of the batch below. It makes 12: the batch is added (1); each
    /// worker claims a file (2, 3); each file's record is saved at the first checkpoint and marked
    /// finished before the rename (4 to 10, the two workers interleaved; a fresh file's empty
    /// record costs no commit to clear); each file's outcome is settled with the worker's next
    /// claim, the last two of which find nothing left (up to 12). Two files that finish at the
    /// same time are marked finished in one commit (`FinishGroups`), which can happen once here,
    /// so 11 are always made. A slower run commits more (progress every second, leases every
    /// two), so each of these is reached.
    static let commits = Array(1...11)

    @Test(.timeLimit(.minutes(1)), arguments: commits)
    func batchRecoversFromACrashAfterCommit(_ commit: Int) throws {
        // GIVEN three files of about 1.5 MiB, served with ranges and an ETag
        let server = try FaultServer()
        let bodies = (0..<3).map { TestData.bytes(count: (3 << 19) + $0 * 1_001, seed: 700 + UInt64(commit * 3 + $0)) }
        let paths = (0..<3).map { "/q\($0).bin" }
        for (path, body) in zip(paths, bodies) { server.setResource(path, body: body) }
        let work = try TemporaryDirectory(prefix: "haul-cli-queue-crash")
        let out = work.file("out")
        let arguments = ["-q", "--retry", "0", "--state", work.file("state"), "-j", "2", "-d", out] + paths.map(server.url)
        let step = "between-queue-commits:\(commit)"

        // WHEN the batch dies right after its N-th commit
        let crashed = try HaulBinary.run(arguments, environment: ["HAUL_TEST_CRASH_AT": step])
        #expect(crashed.status == 128 + SIGKILL, "\(step): the crash point was not reached (status \(crashed.status), stderr: \(crashed.stderr))")
        let inPlace = paths.filter { Disk.exists(out + $0) }
        let sentBefore = paths.map(server.bodyBytesSent)

        // THEN the same command completes every file bit-exact
        let next = try HaulBinary.run(arguments)
        #expect(next.status == 0, "\(step): stderr: \(next.stderr)")
        for (path, body) in zip(paths, bodies) {
            #expect(Disk.difference(out + path, body) == nil, "\(step): \(path)")
        }
        // AND a file the crashed run had already put in place is recognised, not fetched again
        for (index, path) in paths.enumerated() where inPlace.contains(path) {
            #expect(server.bodyBytesSent(path) == sentBefore[index], "\(step): \(path) was in place and was fetched again")
        }
        // AND nothing is left behind: no partial, record or lock
        let leftovers = Self.leftovers(in: out)
        #expect(leftovers.isEmpty, "\(step): left behind: \(leftovers)")
        // AND the queue shows the three downloads completed
        let listing = try StoreFixture(directory: work.file("state")).items()
        #expect(listing.count(state: "completed") == 3, "\(step): \(listing.values)")
    }
}

extension CLIQueueCrashPointTests {
    /// The partials, records and locks left in `directory` (a run that recovered leaves none).
    static func leftovers(in directory: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { name in [".haul-partial", ".haul-resume", ".haul-lock"].contains { name.hasSuffix($0) } }
    }
}
