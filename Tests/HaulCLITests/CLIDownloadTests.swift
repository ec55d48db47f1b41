import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Successful downloads through the binary: the bytes land where the flags say, and nothing is left behind.
@Suite("haul downloads")
struct CLIDownloadTests {
    @Test func outputFileIsBitExactAndLeavesNoPartial() throws {
        // GIVEN a 1 MiB resource
        let server = try FaultServer()
        let body = TestData.bytes(count: 1 << 20, seed: 11)
        server.setResource("/data.bin", body: body)
        let directory = try TemporaryDirectory()
        let output = directory.file("out.bin")
        // WHEN haul downloads it with -o
        let result = try HaulBinary.run(["-q", "-o", output, server.url("/data.bin")])
        // THEN it exits 0, the file is bit-exact and no partial or record remains
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, body) == nil)
        #expect(!Disk.exists(output + ".haul-partial"))
        #expect(!Disk.exists(output + ".haul-resume"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["out.bin"])
    }

    @Test func quietModePrintsNothingOnSuccess() throws {
        // GIVEN a resource
        let server = try FaultServer()
        server.setResource("/q.bin", body: TestData.bytes(count: 1000))
        let directory = try TemporaryDirectory()
        // WHEN haul -q downloads it
        let result = try HaulBinary.run(["-q", "-o", directory.file("q.bin"), server.url("/q.bin")])
        // THEN stdout and stderr are empty
        #expect(result.status == 0)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.isEmpty)
    }

    @Test func normalModeReportsTheSavedPathOnStderr() throws {
        // GIVEN a resource
        let server = try FaultServer()
        server.setResource("/n.bin", body: TestData.bytes(count: 5000))
        let directory = try TemporaryDirectory()
        let output = directory.file("n.bin")
        // WHEN haul downloads it without -q (stderr is not a terminal)
        let result = try HaulBinary.run(["-o", output, server.url("/n.bin")])
        // THEN it says where it saved the file, on stderr, and keeps stdout clean
        #expect(result.status == 0)
        #expect(result.stderr.contains("saved \(output)"), "stderr: \(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test func emptyResourceGivesEmptyFile() throws {
        // GIVEN a resource of 0 bytes
        let server = try FaultServer()
        server.setResource("/empty", body: [])
        let directory = try TemporaryDirectory()
        let output = directory.file("empty")
        // WHEN haul downloads it
        let result = try HaulBinary.run(["-q", "-o", output, server.url("/empty")])
        // THEN an empty file is in place and nothing else
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.size(output) == 0)
        #expect(!Disk.exists(output + ".haul-partial"))
        #expect(!Disk.exists(output + ".haul-resume"))
    }

    @Test func directoryUsesContentDispositionName() throws {
        // GIVEN a resource whose response names it report.txt
        let server = try FaultServer()
        let body = TestData.bytes(count: 70_000, seed: 3)
        server.setResource("/download", body: body)
        server.setPersistentFaults("/download", [.contentDisposition("attachment; filename=\"report.txt\"")])
        let directory = try TemporaryDirectory()
        let target = directory.file("into")
        // WHEN haul downloads it with -d into a directory that does not exist yet
        let result = try HaulBinary.run(["-q", "-d", target, server.url("/download?id=7")])
        // THEN the file is saved under the server's name, bit-exact, with no hidden leftovers
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(target + "/report.txt", body) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: target) == ["report.txt"])
    }

    @Test func directoryFallsBackToURLName() throws {
        // GIVEN a resource without Content-Disposition
        let server = try FaultServer()
        let body = TestData.bytes(count: 12_345, seed: 4)
        server.setResource("/files/archive.tar.gz", body: body)
        let directory = try TemporaryDirectory()
        // WHEN haul downloads it with -d
        let result = try HaulBinary.run(["-q", "-d", directory.path, server.url("/files/archive.tar.gz?sig=abc")])
        // THEN the file is named after the last URL path segment (no query string)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(directory.file("archive.tar.gz"), body) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["archive.tar.gz"])
    }

    @Test func directoryRefusesPathTraversalInContentDisposition() throws {
        // GIVEN a server that suggests a name escaping the directory
        let server = try FaultServer()
        let body = TestData.bytes(count: 1000, seed: 5)
        server.setResource("/evil", body: body)
        server.setPersistentFaults("/evil", [.contentDisposition("attachment; filename=\"../../escaped.bin\"")])
        let root = try TemporaryDirectory()
        let target = root.file("a/b")
        // WHEN haul downloads it with -d
        let result = try HaulBinary.run(["-q", "-d", target, server.url("/evil")])
        // THEN the file stays inside the directory
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(!Disk.exists(root.file("escaped.bin")))
        let saved = try FileManager.default.contentsOfDirectory(atPath: target)
        #expect(saved.count == 1)
        #expect(saved.first.flatMap { Disk.difference(target + "/" + $0, body) } == nil)
    }

    @Test func standardOutputGetsTheBodyExactly() throws {
        // GIVEN a resource of binary data
        let server = try FaultServer()
        let body = TestData.bytes(count: 300_000, seed: 6)
        server.setResource("/stream.bin", body: body)
        // WHEN haul writes it to stdout with -o -
        let result = try HaulBinary.run(["-o", "-", server.url("/stream.bin")])
        // THEN stdout is exactly the body, and nothing but the body
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.count == body.count)
        #expect(Bytes.difference(result.stdout, body) == nil)
    }

    @Test func rangeToStandardOutput() throws {
        // GIVEN a resource
        let server = try FaultServer()
        let body = TestData.bytes(count: 10_000, seed: 7)
        server.setResource("/r.bin", body: body)
        // WHEN haul fetches bytes 100-199 to stdout
        let result = try HaulBinary.run(["-r", "100-199", "-o", "-", server.url("/r.bin")])
        // THEN stdout holds exactly those 100 bytes, asked for with a Range header
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Bytes.difference(result.stdout, Array(body[100...199])) == nil)
        #expect(server.requests.last?.header("Range") == "bytes=100-199")
    }

    @Test func devNullStaysACharacterDevice() throws {
        // GIVEN a resource
        let server = try FaultServer()
        server.setResource("/discard.bin", body: TestData.bytes(count: 200_000, seed: 8))
        // WHEN haul writes it to /dev/null
        let result = try HaulBinary.run(["-q", "-o", "/dev/null", server.url("/discard.bin")])
        // THEN it succeeds, /dev/null is still a character device and nothing was put beside it
        #expect(result.status == 0, "stderr: \(result.stderr)")
        var info = stat()
        #expect(stat("/dev/null", &info) == 0)
        #expect(info.st_mode & S_IFMT == S_IFCHR, "/dev/null is no longer a character device")
        #expect(!Disk.exists("/dev/null.haul-partial"))
        #expect(!Disk.exists("/dev/null.haul-resume"))
    }

    @Test func jsonEventsStartWithStartedAndEndWithCompleted() throws {
        // GIVEN a resource
        let server = try FaultServer()
        let body = TestData.bytes(count: 500_000, seed: 9)
        server.setResource("/j.bin", body: body)
        let directory = try TemporaryDirectory()
        let output = directory.file("j.bin")
        // WHEN haul downloads it with --json
        let result = try HaulBinary.run(["--json", "-o", output, server.url("/j.bin")])
        // THEN every stdout line is a JSON object with an "event", from "started" to "completed"
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let objects = JSONLines.parse(result.stdoutString)
        let events = JSONLines.events(objects)
        #expect(objects.count == result.stdoutString.split(separator: "\n").count)
        #expect(!events.contains("<no event key>"))
        #expect(events.first == "started")
        #expect(events.last == "completed")
        #expect(events.contains("response"))
        let completed = try #require(objects.last)
        #expect(completed["path"] as? String == output)
        #expect((completed["bytes"] as? NSNumber)?.intValue == body.count)
        #expect(Disk.difference(output, body) == nil)
    }

    @Test func jsonEventsEndWithFailedAndItsExitCode() throws {
        // GIVEN a missing resource
        let server = try FaultServer()
        let directory = try TemporaryDirectory()
        // WHEN haul asks for it with --json
        let result = try HaulBinary.run(["--json", "--retry", "0", "-o", directory.file("x"), server.url("/missing")])
        // THEN the last event is "failed" carrying the same exit code the process returns
        #expect(result.status == 4)
        let objects = JSONLines.parse(result.stdoutString)
        #expect(JSONLines.events(objects).first == "started")
        let last = try #require(objects.last)
        #expect(last["event"] as? String == "failed")
        #expect((last["exitCode"] as? NSNumber)?.intValue == 4)
        #expect((last["httpStatus"] as? NSNumber)?.intValue == 404)
    }
}
