import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Checks the test-support launcher itself: a real nginx on loopback, the deterministic test data,
/// and the process runner. These do not skip when nginx is missing: `NginxServer.init` throws a
/// message that says to install it, and the test fails.
@Suite struct NginxLauncherSelfTests {
    private static let curl = "/usr/bin/curl"

    /// Runs curl with `arguments`, printing the HTTP status code on stdout.
    private func curl(_ arguments: [String]) throws -> ProcessResult {
        try ProcessRunner.run(Self.curl, ["-sS", "-w", "%{http_code}"] + arguments, timeout: 60)
    }

    /// nginx writes a log line when a request is finalized, which can race with curl exiting.
    private func accessLog(of server: NginxServer, count: Int) -> [NginxAccessLogEntry] {
        let deadline = Date().addingTimeInterval(5)
        var entries = server.accessLog()
        while entries.count < count && Date() < deadline {
            usleep(10_000)
            entries = server.accessLog()
        }
        return entries
    }

    @Test func servesAFileByteForByteAndAnswersRangeWith206() throws {
        // GIVEN a 10 MiB file served by nginx
        let root = try TemporaryDirectory(prefix: "haul-nginx-root")
        let downloads = try TemporaryDirectory(prefix: "haul-nginx-out")
        let size = 10 << 20
        try TestData.writeFile(at: root.file("ten.bin"), size: size, seed: 42)
        let server = try NginxServer(documentRoot: root.path)
        defer { server.stop() }

        // WHEN curl fetches it whole
        let full = try curl(["-o", downloads.file("ten.bin"), server.baseURL + "/ten.bin"])

        // THEN it arrives intact with 200
        #expect(full.status == 0, "curl failed: \(full.stderr)")
        #expect(full.stdoutString == "200")
        #expect(
            try TestData.sha256(ofFile: downloads.file("ten.bin"))
                == TestData.sha256(ofFile: root.file("ten.bin")))

        // WHEN curl asks for bytes 100-199
        let ranged = try curl(["-r", "100-199", "-o", downloads.file("part.bin"), server.baseURL + "/ten.bin"])

        // THEN nginx answers 206 with exactly those bytes
        #expect(ranged.status == 0, "curl failed: \(ranged.stderr)")
        #expect(ranged.stdoutString == "206")
        let part = try [UInt8](Data(contentsOf: URL(fileURLWithPath: downloads.file("part.bin"))))
        #expect(part.elementsEqual(TestData.bytes(count: 200, seed: 42)[100..<200]), "wrong bytes for 100-199")

        // AND the access log records both requests with the bytes sent and the Range header
        #expect(
            accessLog(of: server, count: 2) == [
                NginxAccessLogEntry(uri: "/ten.bin", status: 200, bodyBytesSent: size, range: nil),
                NginxAccessLogEntry(uri: "/ten.bin", status: 206, bodyBytesSent: 100, range: "bytes=100-199"),
            ])
    }

    @Test func limitedLocationServesTheSameRootAtALimitedRate() throws {
        // GIVEN nginx with limit_rate 512k on /limited/ and a 768 KiB file
        let root = try TemporaryDirectory(prefix: "haul-nginx-root")
        let downloads = try TemporaryDirectory(prefix: "haul-nginx-out")
        let size = 768 << 10
        try TestData.writeFile(at: root.file("one.bin"), size: size, seed: 7)
        let server = try NginxServer(documentRoot: root.path, limitRate: "512k")
        defer { server.stop() }

        // WHEN curl fetches it through /limited/
        let started = Date()
        let result = try curl(["-o", downloads.file("one.bin"), server.baseURL + "/limited/one.bin"])
        let elapsed = Date().timeIntervalSince(started)

        // THEN the bytes are the file's, and the transfer was slowed down: nginx lets one second's
        // worth (512 KiB) go at once, so the last 256 KiB take about half a second
        #expect(result.status == 0, "curl failed: \(result.stderr)")
        #expect(result.stdoutString == "200")
        let body = try [UInt8](Data(contentsOf: URL(fileURLWithPath: downloads.file("one.bin"))))
        let intact = body == TestData.bytes(count: size, seed: 7)
        #expect(intact, "downloaded bytes differ from the file")
        #expect(elapsed > 0.3, "limit_rate 512k did not slow a 768 KiB transfer (took \(elapsed) s)")
        #expect(
            accessLog(of: server, count: 1) == [
                NginxAccessLogEntry(uri: "/limited/one.bin", status: 200, bodyBytesSent: size, range: nil)
            ])
    }

    @Test func stopEndsTheMasterProcessClosesThePortAndRemovesTheDirectory() throws {
        // GIVEN a running nginx
        let root = try TemporaryDirectory(prefix: "haul-nginx-root")
        let server = try NginxServer(documentRoot: root.path)
        let pid = server.pid
        #expect(kill(pid, 0) == 0, "nginx master \(pid) should be running")
        #expect(NginxServer.acceptsConnections(port: server.port))

        // WHEN it is stopped (twice: stop is idempotent)
        server.stop()
        server.stop()

        // THEN the PID is gone, the port refuses connections, and the temp dir is removed
        errno = 0
        #expect(kill(pid, 0) == -1 && errno == ESRCH, "nginx master \(pid) still exists after stop()")
        #expect(!NginxServer.acceptsConnections(port: server.port))
        #expect(!FileManager.default.fileExists(atPath: server.directory))
    }

    @Test func startFailsWithAClearMessageForAMissingRoot() {
        #expect {
            _ = try NginxServer(documentRoot: "/nonexistent/haul-nginx-root")
        } throws: { error in
            "\(error)".contains("does not exist")
        }
    }

    @Test func writeFileProducesTheSameStreamAsBytesAcrossChunks() throws {
        // GIVEN a size spanning an 8 MiB chunk boundary that is not a multiple of 8
        let directory = try TemporaryDirectory()
        let size = (8 << 20) + 13

        // WHEN written in chunks
        try TestData.writeFile(at: directory.file("data"), size: size, seed: 3)

        // THEN the file equals the in-memory bytes, and seeds differ
        let written = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory.file("data"))))
        let expected = TestData.bytes(count: size, seed: 3)
        let same = written == expected
        #expect(same, "writeFile and bytes(count:) produced different streams")
        #expect(TestData.bytes(count: 64, seed: 3) != TestData.bytes(count: 64, seed: 4))
        #expect(TestData.bytes(count: 64, seed: 0) != [UInt8](repeating: 0, count: 64))
    }

    @Test func processRunnerCapturesLargeOutputAndKillsOnTimeout() throws {
        // GIVEN a process writing 5 MB to stdout and some stderr
        let result = try ProcessRunner.run(
            "/bin/sh", ["-c", "head -c 5000000 /dev/zero; echo oops >&2; exit 3"], timeout: 30)

        // THEN nothing deadlocks and everything is captured
        #expect(result.status == 3)
        #expect(result.stdout.count == 5_000_000)
        #expect(result.stderr == "oops\n")

        // WHEN a process outlives its timeout THEN it is killed and an error thrown quickly
        let started = Date()
        #expect(throws: TestSupportError.self) {
            _ = try ProcessRunner.run("/bin/sleep", ["30"], timeout: 0.5)
        }
        #expect(Date().timeIntervalSince(started) < 10)
    }
}
