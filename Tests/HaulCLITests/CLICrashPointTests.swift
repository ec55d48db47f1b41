import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Durability tested by dying at each named step (as `kill -9` would, through the test-only
/// `HAUL_TEST_CRASH_AT` switch): the next run, with no manual action, completes bit-exact.
@Suite("haul crash points")
struct CLICrashPointTests {
    /// Every durability step a single-connection download of a few MiB goes through.
    static let singleSteps = [
        "after-body-write:1", "after-body-write:40", "after-record-save:1", "after-data-sync:1",
        "after-record-save:2", "after-rename:1", "after-directory-sync:1", "before-record-remove:1",
    ]

    /// The same steps while several connections write segments.
    static let segmentedSteps = [
        "after-body-write:1", "after-body-write:300", "after-record-save:1", "after-record-save:3",
        "after-data-sync:1", "after-data-sync:2", "after-segments-joined:1", "after-rename:1", "after-directory-sync:1",
        "before-record-remove:1",
    ]

    @Test(arguments: singleSteps)
    func singleConnectionRecoversFromACrashAt(_ step: String) throws {
        try crashThenComplete(step: step, size: 3 << 20, flags: ["-x", "1"])
    }

    @Test(arguments: segmentedSteps)
    func segmentedDownloadRecoversFromACrashAt(_ step: String) throws {
        try crashThenComplete(step: step, size: 12 << 20, flags: ["-x", "4"])
    }

    @Test(
        "GIVEN a segmented download killed once all its connections ended, before its file is put in place WHEN run again THEN it completes without fetching the file again"
    )
    func aKillAfterTheJoinFetchesNothingAgain() throws {
        let server = try FaultServer()
        let body = TestData.bytes(count: 12 << 20, seed: 4_242)
        server.setResource("/f.bin", body: body)
        let directory = try TemporaryDirectory()
        let output = directory.file("f.bin")
        let arguments = ["-q", "--retry", "0", "-x", "4", "-o", output, server.url("/f.bin")]

        let crashed = try HaulBinary.run(arguments, environment: ["HAUL_TEST_CRASH_AT": "after-segments-joined"])
        #expect(crashed.status == 128 + SIGKILL, "the crash point was not reached (status \(crashed.status), stderr: \(crashed.stderr))")
        // The first connection's response runs past its part until the kill closes it: the
        // server's count settles once it has noticed.
        var sentBefore = server.bodyBytesSent("/f.bin")
        for _ in 0..<50 {
            Thread.sleep(forTimeInterval: 0.1)
            let now = server.bodyBytesSent("/f.bin")
            if now == sentBefore { break }
            sentBefore = now
        }
        let next = try HaulBinary.run(arguments)

        #expect(next.status == 0, "stderr: \(next.stderr)")
        #expect(Disk.difference(output, body) == nil)
        // Every byte was on disk and recorded: nothing is fetched again. (The server counts what
        // it pushed into the socket before the client's close reached it, a few MiB on loopback.)
        #expect(server.bodyBytesSent("/f.bin") - sentBefore < 6 << 20, "fetched again: \(server.bodyBytesSent("/f.bin") - sentBefore) bytes")
    }

    private func crashThenComplete(step: String, size: Int, flags: [String]) throws {
        // GIVEN a resource served with ranges and an ETag
        let server = try FaultServer()
        let body = TestData.bytes(count: size, seed: UInt64(size) &+ UInt64(step.utf8.count))
        server.setResource("/f.bin", body: body)
        let directory = try TemporaryDirectory()
        let output = directory.file("f.bin")
        let arguments = ["-q", "--retry", "0"] + flags + ["-o", output, server.url("/f.bin")]

        // WHEN haul dies at the step
        let crashed = try HaulBinary.run(arguments, environment: ["HAUL_TEST_CRASH_AT": step])
        #expect(crashed.status == 128 + SIGKILL, "\(step): the crash point was not reached (status \(crashed.status), stderr: \(crashed.stderr))")

        // THEN the same command completes bit-exact, leaving nothing behind
        let next = try HaulBinary.run(arguments)
        #expect(next.status == 0, "\(step): stderr: \(next.stderr)")
        #expect(Disk.difference(output, body) == nil, "\(step)")
        for suffix in [".haul-partial", ".haul-resume", ".haul-lock", ".haul-segments"] {
            #expect(!Disk.exists(output + suffix), "\(step): \(suffix) left behind")
        }
    }
}
