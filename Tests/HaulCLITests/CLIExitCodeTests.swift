import Foundation
import HaulTestSupport
import Testing

/// Each failure maps to its documented exit code, and the files on disk are left as promised.
@Suite("haul exit codes")
struct CLIExitCodeTests {
    @Test func notFoundExitsFourAndCreatesNothing() throws {
        // GIVEN a server without the resource
        let server = try FaultServer()
        let directory = try TemporaryDirectory()
        let output = directory.file("missing.bin")
        // WHEN haul asks for it
        let result = try HaulBinary.run(["-q", "--retry", "0", "-o", output, server.url("/missing.bin")])
        // THEN it exits 4, says 404, and leaves no file, partial or record
        #expect(result.status == 4, "stderr: \(result.stderr)")
        #expect(result.stderr.contains("404"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test func serverErrorAfterRetriesExitsFour() throws {
        // GIVEN a resource that always answers 503
        let server = try FaultServer()
        server.setResource("/busy", body: TestData.bytes(count: 100))
        server.setPersistentFaults("/busy", [.status(503)])
        let directory = try TemporaryDirectory()
        // WHEN haul allows one retry, quickly
        let result = try HaulBinary.run(["-q", "--retry", "1", "--retry-wait", "0.05", "-o", directory.file("b"), server.url("/busy")])
        // THEN it tried twice and exits 4
        #expect(result.status == 4, "stderr: \(result.stderr)")
        #expect(server.requests.count == 2)
        #expect(!Disk.exists(directory.file("b")))
    }

    @Test func existingDestinationExitsSevenAndIsUntouched() throws {
        // GIVEN a file already at the destination
        let server = try FaultServer()
        server.setResource("/f.bin", body: TestData.bytes(count: 10_000, seed: 1))
        let directory = try TemporaryDirectory()
        let output = directory.file("f.bin")
        let original = Array("keep me".utf8)
        try Disk.write(original, to: output)
        // WHEN haul is asked to download there without --force or -c
        let result = try HaulBinary.run(["-q", "--retry", "0", "-o", output, server.url("/f.bin")])
        // THEN it exits 7, the file is unchanged and nothing was put beside it
        #expect(result.status == 7, "stderr: \(result.stderr)")
        #expect(result.stderr.contains("--force"))
        #expect(Disk.difference(output, original) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["f.bin"])
    }

    @Test func existingFileInDirectoryExitsSeven() throws {
        // GIVEN a file in the -d directory with the name the download would take
        let server = try FaultServer()
        server.setResource("/same.bin", body: TestData.bytes(count: 10_000, seed: 1))
        let directory = try TemporaryDirectory()
        let original = Array("older".utf8)
        try Disk.write(original, to: directory.file("same.bin"))
        // WHEN haul downloads into that directory
        let result = try HaulBinary.run(["-q", "--retry", "0", "-d", directory.path, server.url("/same.bin")])
        // THEN it exits 7 and the existing file is untouched
        #expect(result.status == 7, "stderr: \(result.stderr)")
        #expect(Disk.difference(directory.file("same.bin"), original) == nil)
    }

    @Test func forceReplacesTheExistingFile() throws {
        // GIVEN a file already at the destination
        let server = try FaultServer()
        let body = TestData.bytes(count: 40_000, seed: 2)
        server.setResource("/f.bin", body: body)
        let directory = try TemporaryDirectory()
        let output = directory.file("f.bin")
        try Disk.write(Array(repeating: 0x41, count: 90_000), to: output)
        // WHEN haul runs with --force
        let result = try HaulBinary.run(["-q", "--force", "-o", output, server.url("/f.bin")])
        // THEN the file is replaced by the server's bytes (not merged with the longer old file)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, body) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["f.bin"])
    }

    @Test func continueOnACorrectPrefixCompletesTheFile() throws {
        // GIVEN the first 300 000 bytes of the resource already at the destination
        let server = try FaultServer()
        let body = TestData.bytes(count: 1_000_000, seed: 3)
        server.setResource("/c.bin", body: body)
        let directory = try TemporaryDirectory()
        let output = directory.file("c.bin")
        try Disk.write(Array(body[..<300_000]), to: output)
        // WHEN haul -c continues it
        let result = try HaulBinary.run(["-q", "-c", "--retry", "0", "-o", output, server.url("/c.bin")])
        // THEN it exits 0 with the whole file, bit-exact, and asked only for what was missing (plus an overlap)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, body) == nil)
        #expect(!Disk.exists(output + ".haul-partial"))
        #expect(!Disk.exists(output + ".haul-resume"))
        let range = try #require(server.requests.last?.header("Range"))
        let start = try #require(Int(range.dropFirst("bytes=".count).prefix { $0.isNumber }))
        #expect(start > 0 && start <= 300_000, "Range: \(range)")
        #expect(server.bodyBytesSent("/c.bin") < body.count)
    }

    @Test func continueOnAWrongPrefixDownloadsAnewAndReplacesTheFileOnceComplete() throws {
        // GIVEN a file at the destination that is NOT a prefix of the resource
        let server = try FaultServer()
        let body = TestData.bytes(count: 500_000, seed: 4)
        server.setResource("/w.bin", body: body)
        let directory = try TemporaryDirectory()
        let output = directory.file("w.bin")
        let local = TestData.bytes(count: 200_000, seed: 99)
        try Disk.write(local, to: output)
        // WHEN haul -c tries to continue it
        let result = try HaulBinary.run(["-q", "-c", "--retry", "0", "-o", output, server.url("/w.bin")])
        // THEN (as wget and curl do) it downloads the file anew beside it and replaces it: exit 0,
        // the server's bytes, no partial, record or lock left
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, body) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["w.bin"])
    }

    @Test func continueOnACompleteFileSucceedsWithoutChangingIt() throws {
        // GIVEN the whole resource already at the destination
        let server = try FaultServer()
        let body = TestData.bytes(count: 50_000, seed: 5)
        server.setResource("/done.bin", body: body)
        let directory = try TemporaryDirectory()
        let output = directory.file("done.bin")
        try Disk.write(body, to: output)
        // WHEN haul -c runs
        let result = try HaulBinary.run(["-q", "-c", "--retry", "0", "-o", output, server.url("/done.bin")])
        // THEN it exits 0 and the file is still bit-exact
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, body) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["done.bin"])
    }

    @Test func connectionRefusedExitsThree() throws {
        // GIVEN a loopback port with nothing listening
        let refusing = try RefusingPort()
        let directory = try TemporaryDirectory()
        let output = directory.file("nothing")
        // WHEN haul tries it without retries
        let result = try HaulBinary.run(["-q", "--retry", "0", "-o", output, "http://127.0.0.1:\(refusing.port)/file"])
        // THEN it exits 3 and leaves nothing behind
        #expect(result.status == 3, "stderr: \(result.stderr)")
        #expect(!result.stderr.isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test func serverIgnoringRangeForARangeRequestExitsFive() throws {
        // GIVEN a server that answers 200 with the whole body even when a Range is asked for
        let server = try FaultServer()
        server.setResource("/nr.bin", body: TestData.bytes(count: 20_000, seed: 6))
        server.setPersistentFaults("/nr.bin", [.ignoreRange])
        let directory = try TemporaryDirectory()
        let output = directory.file("nr.bin")
        // WHEN haul asks for bytes 0-99 only
        let result = try HaulBinary.run(["-q", "--retry", "0", "--range", "0-99", "-o", output, server.url("/nr.bin")])
        // THEN it exits 5 and no destination file appears
        #expect(result.status == 5, "stderr: \(result.stderr)")
        #expect(server.requests.first?.header("Range") == "bytes=0-99")
        #expect(!Disk.exists(output))
    }

    @Test func rangeToFileWritesOnlyThoseBytes() throws {
        // GIVEN a resource
        let server = try FaultServer()
        let body = TestData.bytes(count: 20_000, seed: 7)
        server.setResource("/part.bin", body: body)
        let directory = try TemporaryDirectory()
        let output = directory.file("tail")
        // WHEN haul asks for the last 500 bytes
        let result = try HaulBinary.run(["-q", "--range=-500", "-o", output, server.url("/part.bin")])
        // THEN the file holds exactly those bytes
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, Array(body[(body.count - 500)...])) == nil)
    }

    @Test func bytesAfterTheContentLengthAreDroppedExitsZero() throws {
        // GIVEN a server that sends garbage after the announced body on every request
        let server = try FaultServer()
        let body = TestData.bytes(count: 10_000, seed: 8)
        server.setResource("/extra.bin", body: body)
        server.setPersistentFaults("/extra.bin", [.extraBytes(count: 5000)])
        let directory = try TemporaryDirectory()
        let output = directory.file("extra.bin")
        // WHEN haul downloads it
        let result = try HaulBinary.run(["-q", "--retry", "0", "-o", output, server.url("/extra.bin")])
        // THEN it succeeds with exactly the announced bytes: Content-Length is the message's framing,
        // so libcurl ends the response there and the garbage never reaches Haul as body (this is
        // why it cannot exit 9; see moreBytesThanAnnouncedExitsNine for a framing that lets it through)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, body) == nil)
    }

    @Test func moreBytesThanAnnouncedExitsNine() throws {
        // GIVEN a server whose chunked body (15,000 bytes) is longer than the Content-Length it also
        // announces (10,000): the framing lets the excess through, so only Haul can refuse it
        let server = try FaultServer()
        let body = TestData.bytes(count: 15_000, seed: 8)
        server.setResource("/extra.bin", body: body, extraHeaders: [("Content-Length", "10000")])
        server.setPersistentFaults("/extra.bin", [.chunked])
        let directory = try TemporaryDirectory()
        let output = directory.file("extra.bin")
        // WHEN haul downloads it
        let result = try HaulBinary.run(["-q", "--retry", "0", "-o", output, server.url("/extra.bin")])
        // THEN it is a protocol error (9) that says so, no file is published, and the partial holds
        // the announced bytes only, never the excess
        #expect(result.status == 9, "stderr: \(result.stderr)")
        #expect(result.stderr.contains("more bytes than the 10000 it announced"), "stderr: \(result.stderr)")
        #expect(!Disk.exists(output))
        #expect(Disk.difference(output + ".haul-partial", Array(body[..<10_000])) == nil)
    }
}
