import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Attacks on `-R` / `--remote-time` where the download has no finished file of its own: standard
/// output and a FIFO. curl's `-R` sets the time only on a regular file it wrote (`outs.s_isreg`);
/// Haul's doc says "the finished file". And a file dated by `-R` must still be recognised as the
/// download's own when the same command runs again.
@Suite("haul -R: where the server's time goes (options attack)")
struct CLIOptionsAttackTests {
    private static let stated = "Sun, 06 Nov 1994 08:49:37 GMT"
    private static let statedSeconds: TimeInterval = 784_111_777

    @Test(.timeLimit(.minutes(1)))
    func remoteTimeToStandardOutputLeavesAFileNamedDashAlone() throws {
        // GIVEN a server that states a Last-Modified date, and a working directory that holds an
        // unrelated file named "-"
        let server = try FaultServer()
        server.setResource("/t.bin", body: TestData.bytes(count: 4_000, seed: 7), lastModified: Self.stated)
        let dir = try TemporaryDirectory(prefix: "haul-optattack-stdout")
        let dash = dir.file("-")
        try Data("mine".utf8).write(to: URL(fileURLWithPath: dash))
        let before = try Self.modified(dash)

        // WHEN the download goes to standard output with -R, run from that directory
        let result = try ProcessRunner.run(
            "/bin/sh", ["-c", "cd \"$1\" && exec \"$2\" -R -q -o - \"$3\" > /dev/null", "sh", dir.path, try HaulBinary.path(), server.url("/t.bin")])

        // THEN the download succeeds and the file named "-" keeps its own time (it is not the
        // download's file: the bytes went to standard output)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let after = try Self.modified(dash)
        #expect(after == before, "the file named - took the server's time: \(after) (stated \(Self.statedSeconds))")
    }

    @Test(.timeLimit(.minutes(1)))
    func remoteTimeIntoAFIFOLeavesTheFIFOsTimeAlone() throws {
        // GIVEN a server that states a Last-Modified date, and a FIFO with a reader
        let server = try FaultServer()
        server.setResource("/t.bin", body: TestData.bytes(count: 4_000, seed: 8), lastModified: Self.stated)
        let dir = try TemporaryDirectory(prefix: "haul-optattack-fifo")
        let fifo = dir.file("pipe")
        #expect(mkfifo(fifo, 0o600) == 0)

        // WHEN the download is written into the FIFO with -R
        let script = "cat \"$1\" > /dev/null & \"$2\" -R -q -o \"$1\" \"$3\"; status=$?; wait; exit $status"
        let result = try ProcessRunner.run("/bin/sh", ["-c", script, "sh", fifo, try HaulBinary.path(), server.url("/t.bin")])

        // THEN it succeeds and the FIFO (not a file the download made) is not dated 1994
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let after = try Self.modified(fifo)
        #expect(after != Self.statedSeconds, "the FIFO took the server's Last-Modified time")
    }

    @Test(.timeLimit(.minutes(1)))
    func remoteTimeRunAgainFindsItsOwnFinishedFile() throws {
        // GIVEN a file downloaded with -R (dated 1994 by the server), as a plain download run
        // twice is: the second run finds its own finished file and says so
        let server = try FaultServer()
        server.setResource("/t.bin", body: TestData.bytes(count: 4_000, seed: 9), lastModified: Self.stated)
        let out = try TemporaryDirectory(prefix: "haul-optattack-again")
        let plainFirst = try HaulBinary.run([server.url("/t.bin"), "-q", "-o", out.file("plain.bin")])
        let plainAgain = try HaulBinary.run([server.url("/t.bin"), "-q", "-o", out.file("plain.bin")])
        let first = try HaulBinary.run([server.url("/t.bin"), "-R", "-q", "-o", out.file("r.bin")])
        #expect(plainFirst.status == 0 && plainAgain.status == 0 && first.status == 0, "stderr: \(plainAgain.stderr) \(first.stderr)")
        #expect(try Self.modified(out.file("r.bin")) == Self.statedSeconds)

        // WHEN the same command runs again
        let again = try HaulBinary.run([server.url("/t.bin"), "-R", "-q", "-o", out.file("r.bin")])

        // THEN it too is already complete (exit 0), not refused as someone else's file (exit 7):
        // the finished mark holds the file's time from before -R changed it
        #expect(again.status == 0, "exit \(again.status), stderr: \(again.stderr)")
    }

    @Test(.timeLimit(.minutes(1)), arguments: ["Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 06 Nov 1994 08:49:37 +0000"])
    func remoteTimeReadsTheDatesCurlsRReads(stated: String) throws {
        // GIVEN a server whose Last-Modified names its zone UTC or +0000 instead of GMT (curl -R
        // reads both as 1994-11-06 08:49:37; RFC 9110 asks recipients to be robust)
        let server = try FaultServer()
        server.setResource("/t.bin", body: TestData.bytes(count: 4_000, seed: 10), lastModified: stated)
        let out = try TemporaryDirectory(prefix: "haul-optattack-zone")

        // WHEN it is downloaded with -R
        let result = try HaulBinary.run([server.url("/t.bin"), "-R", "-q", "-o", out.file("z.bin")])

        // THEN the file has the server's time, as curl -R gives it
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(try Self.modified(out.file("z.bin")) == Self.statedSeconds, "Last-Modified: \(stated)")
    }

    private static func modified(_ path: String) throws -> TimeInterval {
        let date = try #require(try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date)
        return date.timeIntervalSince1970
    }
}
