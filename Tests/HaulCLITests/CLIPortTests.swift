import Foundation
import HaulTestSupport
import Testing

/// A URL whose port cannot exist is a usage error (exit 2), found before any connection is tried.
@Suite("haul URL ports")
struct CLIPortTests {
    @Test(arguments: ["70000", "65536", "0", "99999999999999999999999"])
    func portOutOfRangeIsAUsageError(port: String) throws {
        // GIVEN a URL whose port is outside 1-65535
        let directory = try TemporaryDirectory()
        let url = "http://127.0.0.1:\(port)/f"
        // WHEN haul is asked to download it
        let result = try HaulBinary.run(["--retry", "0", "-o", directory.file("x"), url])
        // THEN it exits 2 with a message naming the port, and creates nothing
        #expect(result.status == 2, "stderr: \(result.stderr)")
        #expect(result.stderr.contains("port \(port) is out of range"), "stderr: \(result.stderr)")
        #expect(result.stderr.contains(port), "stderr: \(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test func portOutOfRangeInQueueAddIsAUsageError() throws {
        // GIVEN a queue store and a URL with port 70000
        let state = try TemporaryDirectory()
        // WHEN it is added to the queue
        let result = try HaulBinary.run(["queue", "add", "--state", state.path, "http://127.0.0.1:70000/f"])
        // THEN it is refused as a usage error
        #expect(result.status == 2, "stderr: \(result.stderr)")
        #expect(result.stderr.contains("70000"), "stderr: \(result.stderr)")
    }

    @Test func highestValidPortIsAccepted() throws {
        // GIVEN a URL with port 65535, where nothing listens
        let directory = try TemporaryDirectory()
        // WHEN haul tries it
        let result = try HaulBinary.run(["-q", "--retry", "0", "--connect-timeout", "2", "-o", directory.file("x"), "http://127.0.0.1:65535/f"])
        // THEN the URL passes validation: whatever happens next (normally a refused connection,
        // exit 3), it is not a usage error
        #expect(result.status != 2, "stderr: \(result.stderr)")
        #expect(!result.stderr.contains("out of range"), "stderr: \(result.stderr)")
    }
}
