import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A hostile round on issue 38's surfaces: the finished file marked once after its rename, the
/// claims ahead of a queue run, the process-wide figures ticker.
@Suite("issue 38 attack: mark once, claims ahead, figures ticker")
struct CLIIssue38AttackTests {
    @Test(
        """
        GIVEN a download killed right after its rename, before its finished mark, then run again ("already complete") \
        WHEN it is run a third time THEN it is still already complete: exit 0, nothing fetched, the file bit-exact
        """,
        .timeLimit(.minutes(1)))
    func aFileFoundByItsRecordAfterACrashBeforeItsMarkStaysCompleteRunAfterRun() throws {
        let server = try FaultServer()
        let body = TestData.bytes(count: 200_000, seed: 3_801)
        server.setResource("/f.bin", body: body)
        let directory = try TemporaryDirectory(prefix: "haul-cli-a38")
        let output = directory.file("f.bin")
        let arguments = ["-q", "--retry", "0", "-o", output, server.url("/f.bin")]
        let crashed = try HaulBinary.run(arguments, environment: ["HAUL_TEST_CRASH_AT": "after-rename"])
        try #require(crashed.status == 128 + SIGKILL, "the crash point was not reached: \(crashed.stderr)")

        let second = try HaulBinary.run(["--retry", "0", "-o", output, server.url("/f.bin")])
        #expect(second.status == 0, "second run: \(second.stderr)")
        #expect(second.stderr.contains("already complete"), "second run: \(second.stderr)")
        let requestsBefore = server.requests.count

        let third = try HaulBinary.run(["--retry", "0", "-o", output, server.url("/f.bin")])

        #expect(third.status == 0, "third run: \(third.stderr)")
        #expect(third.stderr.contains("already complete"), "third run: \(third.stderr)")
        #expect(server.requests.count == requestsBefore, "the third run fetched again")
        #expect(Disk.difference(output, body) == nil)
        #expect(!Disk.exists(output + ".haul-resume"))
    }
}
