import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Regressions from trying Haul as a hostile or careless user would: each of these once lost,
/// spliced or leaked bytes through one path or another.
@Suite("haul trust")
struct CLITrustTests {
    @Test func secondRunOnTheSameDestinationIsRefusedWhileTheFirstRuns() throws {
        // GIVEN a slow 1 MiB download running to out.bin
        let server = try FaultServer()
        let body = TestData.bytes(count: 1 << 20, seed: 81)
        server.setResource("/slow.bin", body: body)
        server.setPersistentFaults("/slow.bin", [.throttle(bytesPerSecond: 400_000)])
        let directory = try TemporaryDirectory()
        let output = directory.file("out.bin")
        let first = try RunningHaul(["-q", "-x", "1", "-o", output, server.url("/slow.bin")])
        #expect(Disk.waitUntil(timeout: 10) { (Disk.size(output + ".haul-partial") ?? 0) > 0 })

        // WHEN a second run starts on the same destination
        let second = try HaulBinary.run(["-q", "-x", "1", "-o", output, server.url("/slow.bin")])

        // THEN it exits 7 naming the process that holds the destination, and the first completes bit-exact
        #expect(second.status == 7, "stderr: \(second.stderr)")
        #expect(second.stderr.contains("process \(first.pid)"), "stderr: \(second.stderr)")
        #expect(try first.wait() == .exited(0), "stderr: \(first.stderr)")
        #expect(Disk.difference(output, body) == nil)
        #expect(!Disk.exists(output + ".haul-lock"))
    }

    @Test func fileCreatedAtTheDestinationDuringTheDownloadIsNotReplaced() throws {
        // GIVEN a slow download running to out.bin
        let server = try FaultServer()
        let body = TestData.bytes(count: 1 << 20, seed: 82)
        server.setResource("/slow.bin", body: body)
        server.setPersistentFaults("/slow.bin", [.throttle(bytesPerSecond: 1_000_000)])
        let directory = try TemporaryDirectory()
        let output = directory.file("out.bin")
        let run = try RunningHaul(["-q", "-x", "1", "-o", output, server.url("/slow.bin")])
        #expect(Disk.waitUntil(timeout: 10) { (Disk.size(output + ".haul-partial") ?? 0) > 0 })

        // WHEN the user creates out.bin meanwhile
        let precious = Array("MY PRECIOUS THESIS".utf8)
        try Disk.write(precious, to: output)

        // THEN haul exits 7, the user's file is untouched and the download is kept as the partial
        #expect(try run.wait() == .exited(7), "stderr: \(run.stderr)")
        #expect(Disk.difference(output, precious) == nil)
        #expect(Disk.difference(output + ".haul-partial", body) == nil)

        // AND with --force the next run puts the kept download in place without fetching it again
        let forced = try HaulBinary.run(["-q", "--force", "-o", output, server.url("/slow.bin")])
        #expect(forced.status == 0, "stderr: \(forced.stderr)")
        #expect(Disk.difference(output, body) == nil)
    }

    @Test func directoryResumeDoesNotOverwriteAFileTheUserCreatedSince() throws {
        // GIVEN a -d download named by Content-Disposition, interrupted
        let server = try FaultServer()
        let body = TestData.bytes(count: 2 << 20, seed: 83)
        server.setResource("/d", body: body, extraHeaders: [("Content-Disposition", "attachment; filename=\"x.bin\"")])
        server.enqueueFaults("/d", [.dropAfter(bytes: 1_500_000)])
        let directory = try TemporaryDirectory()
        let first = try HaulBinary.run(["-q", "--retry", "0", "-d", directory.path, server.url("/d")])
        #expect(first.status == 3, "stderr: \(first.stderr)")

        // WHEN the user creates x.bin, and the download is run again
        let precious = Array("MY PRECIOUS THESIS".utf8)
        try Disk.write(precious, to: directory.file("x.bin"))
        let second = try HaulBinary.run(["-q", "--retry", "0", "-d", directory.path, server.url("/d")])

        // THEN the user's file is untouched and haul exits 7
        #expect(second.status == 7, "stderr: \(second.stderr)")
        #expect(Disk.difference(directory.file("x.bin"), precious) == nil)
    }

    @Test func segmentConnectionsAfterACrossOriginRedirectCarryNoCredentials() throws {
        // GIVEN a server that redirects to another origin serving a 12 MiB file with ranges
        let origin = try FaultServer()
        let other = try FaultServer()
        let body = TestData.bytes(count: 12 << 20, seed: 84)
        other.setResource("/f.bin", body: body)
        origin.setPersistentFaults("/f.bin", [.redirect(status: 302, location: other.url("/f.bin"))])
        let directory = try TemporaryDirectory()
        let output = directory.file("f.bin")

        // WHEN haul downloads it with 4 connections and credentials
        let result = try HaulBinary.run([
            "-q", "-x", "4", "-H", "Authorization: Bearer secret", "-H", "Cookie: session=secret",
            "-o", output, origin.url("/f.bin"),
        ])

        // THEN the file is bit-exact and no request to the other origin carried the credentials
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, body) == nil)
        let requests = other.requests
        #expect(requests.count > 1, "the download should have used several connections")
        for request in requests {
            #expect(request.header("Authorization") == nil, "\(request.path) \(request.header("Range") ?? "")")
            #expect(request.header("Cookie") == nil)
        }
    }

    @Test func segmentConnectionsAfterA303AreGetsWithoutBody() throws {
        // GIVEN a POST endpoint that answers 303 to a 12 MiB file on another origin
        let origin = try FaultServer()
        let other = try FaultServer()
        let body = TestData.bytes(count: 12 << 20, seed: 85)
        other.setResource("/result.bin", body: body)
        origin.setPersistentFaults("/submit", [.redirect(status: 303, location: other.url("/result.bin"))])
        let directory = try TemporaryDirectory()
        let output = directory.file("result.bin")

        // WHEN haul posts with 4 connections
        let result = try HaulBinary.run(["-q", "-x", "4", "--data", "secret=1", "-o", output, origin.url("/submit")])

        // THEN every request to the other origin is a GET without a body
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, body) == nil)
        #expect(other.requests.count > 1)
        for request in other.requests {
            #expect(request.method == "GET")
            #expect(request.body.isEmpty)
        }
    }

    @Test func partialResponseWithoutTheRecordedValidatorIsNotSpliced() throws {
        // GIVEN a partial of version 1 (ETag "v1") left by a dropped connection
        let server = try FaultServer()
        let old = TestData.bytes(count: 3 << 20, seed: 94)
        server.setResource("/f.bin", body: old, etag: "\"v1\"")
        server.enqueueFaults("/f.bin", [.dropAfter(bytes: 1_277_952)])
        let directory = try TemporaryDirectory()
        let output = directory.file("f.bin")
        let arguments = ["-q", "-x", "1", "--retry", "0", "-o", output, server.url("/f.bin")]
        let first = try HaulBinary.run(arguments)
        #expect(first.status == 3, "stderr: \(first.stderr)")

        // WHEN the file changes and the server ignores If-Range, answering 206 without an ETag
        let new = TestData.bytes(count: 3 << 20, seed: 95)
        server.setResource("/f.bin", body: new, etag: "\"v2\"")
        server.enqueueFaults("/f.bin", [.combined([.ignoreIfRange, .withoutValidators])])
        let second = try HaulBinary.run(arguments)

        // THEN the result is the new version whole, never a splice of the two
        #expect(second.status == 0, "stderr: \(second.stderr)")
        #expect(Disk.difference(output, new) == nil)
    }

    @Test func partialFromAnotherURLIsReusedWhenTheServerProvesItTheSameFile() throws {
        // GIVEN a partial fetched from one URL
        let server = try FaultServer()
        let body = TestData.bytes(count: 3 << 20, seed: 96)
        server.setResource("/a.bin", body: body)
        server.setResource("/mirror/a.bin", body: body)
        server.enqueueFaults("/a.bin", [.dropAfter(bytes: 2_000_000)])
        let directory = try TemporaryDirectory()
        let output = directory.file("a.bin")
        let first = try HaulBinary.run(["-q", "-x", "1", "--retry", "0", "-o", output, server.url("/a.bin")])
        #expect(first.status == 3, "stderr: \(first.stderr)")

        // WHEN the same destination is downloaded from another URL serving the same file
        let second = try HaulBinary.run(["-x", "1", "--retry", "0", "-o", output, server.url("/mirror/a.bin")])

        // THEN the partial is continued (with an overlap compared), says so, and the result is bit-exact
        #expect(second.status == 0, "stderr: \(second.stderr)")
        #expect(Disk.difference(output, body) == nil)
        #expect(second.stderr.contains("another URL"), "stderr: \(second.stderr)")
        let range = server.requests.last?.header("Range")
        #expect(range == "bytes=\(2_000_000 - 65_536)-")
        #expect(server.bodyBytesSent("/mirror/a.bin") == body.count - 2_000_000 + 65_536)
    }

    @Test func forceRefetchesWhenTheFinishedFileChangedSince() throws {
        // GIVEN a finished download whose finished record was left behind (the process died before removing it)
        let server = try FaultServer()
        let body = TestData.bytes(count: 2 << 20, seed: 87)
        server.setResource("/f.bin", body: body)
        let directory = try TemporaryDirectory()
        let output = directory.file("out.bin")
        let crashed = try HaulBinary.run(["-q", "-o", output, server.url("/f.bin")], environment: ["HAUL_TEST_CRASH_AT": "after-rename"])
        #expect(crashed.status == 128 + SIGKILL, "status \(crashed.status) stderr: \(crashed.stderr)")
        #expect(Disk.exists(output + ".haul-resume"))

        // WHEN 10 bytes of out.bin change, and haul runs with --force
        var changed = body
        for index in 100..<110 { changed[index] ^= 0xFF }
        try Disk.write(changed, to: output)
        let requestsBefore = server.requests.count
        let forced = try HaulBinary.run(["-q", "--force", "-o", output, server.url("/f.bin")])

        // THEN it fetches the file again and the result is the server's
        #expect(forced.status == 0, "stderr: \(forced.stderr)")
        #expect(server.requests.count > requestsBefore)
        #expect(Disk.difference(output, body) == nil)
    }

    @Test func continueRefusesASymlinkAndLeavesIt() throws {
        // GIVEN out.bin is a symlink to another file
        let server = try FaultServer()
        server.setResource("/f.bin", body: TestData.bytes(count: 100_000, seed: 88))
        let directory = try TemporaryDirectory()
        let target = directory.file("target.bin")
        try Disk.write(Array(repeating: 7, count: 1000), to: target)
        let output = directory.file("out.bin")
        #expect(symlink(target, output) == 0)

        for flags in [["-c"], [], ["--force"]] {
            // WHEN haul runs on it
            let result = try HaulBinary.run(["-q"] + flags + ["-o", output, server.url("/f.bin")])
            // THEN it exits 7 and the link, its target and no partial remain as they were
            #expect(result.status == 7, "\(flags) stderr: \(result.stderr)")
            var info = stat()
            #expect(lstat(output, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK)
            #expect(Disk.bytes(target) == Array(repeating: 7, count: 1000))
            #expect(!Disk.exists(output + ".haul-partial"))
        }
    }

    @Test func hardLinkPlantedAtThePartialIsNeverWrittenThrough() throws {
        // GIVEN a hard link to another file planted at out.bin.haul-partial
        let server = try FaultServer()
        let body = TestData.bytes(count: 100_000, seed: 89)
        server.setResource("/f.bin", body: body)
        let directory = try TemporaryDirectory()
        let victim = directory.file("victim.txt")
        let original = Array("do not overwrite".utf8)
        try Disk.write(original, to: victim)
        let output = directory.file("out.bin")
        #expect(link(victim, output + ".haul-partial") == 0)

        // WHEN haul downloads to out.bin
        let result = try HaulBinary.run(["-q", "-o", output, server.url("/f.bin")])

        // THEN the download completes and the linked file is untouched
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, body) == nil)
        #expect(Disk.bytes(victim) == original)
    }

    @Test func recordWhosePartialWasDeletedStartsAfresh() throws {
        // GIVEN an interrupted download whose partial the user then deleted (the record stays)
        let server = try FaultServer()
        let body = TestData.bytes(count: 2 << 20, seed: 214)
        server.setResource("/f.bin", body: body)
        server.enqueueFaults("/f.bin", [.dropAfter(bytes: 1_500_000)])
        let directory = try TemporaryDirectory()
        let output = directory.file("f.bin")
        let arguments = ["-q", "-x", "1", "--retry", "0", "-o", output, server.url("/f.bin")]
        #expect(try HaulBinary.run(arguments).status == 3)
        #expect(unlink(output + ".haul-partial") == 0)

        // WHEN the same command runs again THEN it downloads the file from byte 0
        let again = try HaulBinary.run(arguments)
        #expect(again.status == 0, "stderr: \(again.stderr)")
        #expect(Disk.difference(output, body) == nil)
        #expect(server.requests.last?.header("Range") == nil)
    }

    @Test func forceKeepsThePermissionBitsOfTheReplacedFile() throws {
        // GIVEN an existing out.bin with mode 0600
        let server = try FaultServer()
        let body = TestData.bytes(count: 50_000, seed: 90)
        server.setResource("/f.bin", body: body)
        let directory = try TemporaryDirectory()
        let output = directory.file("out.bin")
        try Disk.write([1, 2, 3], to: output)
        #expect(chmod(output, 0o600) == 0)

        // WHEN haul replaces it with --force
        let result = try HaulBinary.run(["-q", "--force", "-o", output, server.url("/f.bin")])

        // THEN the new file has the old mode
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, body) == nil)
        var info = stat()
        #expect(stat(output, &info) == 0 && info.st_mode & 0o7777 == 0o600)
    }

    @Test func bodyWithoutLengthStopsAtMaxSizeAndKeepsTheBytes() throws {
        // GIVEN a 3 MiB body sent without a length (close-delimited)
        let server = try FaultServer()
        server.setResource("/endless", body: TestData.bytes(count: 3 << 20, seed: 91))
        server.setPersistentFaults("/endless", [.closeDelimited])
        let directory = try TemporaryDirectory()
        let output = directory.file("endless.bin")

        // WHEN haul downloads it with --max-size 1M
        let result = try HaulBinary.run(["-q", "--max-size", "1M", "-o", output, server.url("/endless")])

        // THEN it stops with exit 10, keeping exactly 1 MiB as the partial
        #expect(result.status == 10, "stderr: \(result.stderr)")
        #expect(Disk.size(output + ".haul-partial") == 1 << 20)
        #expect(!Disk.exists(output))
    }

    @Test func announcedLengthOverMaxSizeIsRefusedBeforeAnyByte() throws {
        let server = try FaultServer()
        server.setResource("/big", body: TestData.bytes(count: 2 << 20, seed: 92))
        let directory = try TemporaryDirectory()
        let output = directory.file("big.bin")
        let result = try HaulBinary.run(["-q", "--max-size", "1M", "-o", output, server.url("/big")])
        #expect(result.status == 10, "stderr: \(result.stderr)")
        #expect(!Disk.exists(output))
        #expect(!Disk.exists(output + ".haul-partial"))
    }

    @Test func directOutputFailureDoesNotPromiseAResume() throws {
        // GIVEN /dev/full as the output
        let server = try FaultServer()
        server.setResource("/f.bin", body: TestData.bytes(count: 200_000, seed: 93))
        // WHEN haul writes to it
        let result = try HaulBinary.run(["-q", "-o", "/dev/full", server.url("/f.bin")])
        // THEN it fails with exit 6 and does not claim the next run resumes
        #expect(result.status == 6, "stderr: \(result.stderr)")
        #expect(!result.stderr.contains("next run resumes"), "stderr: \(result.stderr)")
        #expect(result.stderr.contains("cannot be resumed"), "stderr: \(result.stderr)")
    }
}

/// `--continue` cases taken from peers' own test suites (curl, wget, aria2).
@Suite("haul continue")
struct CLIContinueTests {
    @Test func fileWhoseTailDiffersIsReplacedByAFreshDownloadOnlyOnceComplete() throws {
        // GIVEN an existing 1 MiB file whose last 64 KiB differ from the server's 3 MiB file
        let server = try FaultServer()
        let body = TestData.bytes(count: 3 << 20, seed: 97)
        server.setResource("/f.bin", body: body)
        let directory = try TemporaryDirectory()
        let output = directory.file("f.bin")
        var existing = Array(body[0..<(1 << 20)])
        for index in (existing.count - 1000)..<existing.count { existing[index] ^= 0x5A }
        try Disk.write(existing, to: output)

        // WHEN haul continues it
        let result = try HaulBinary.run(["-c", "-x", "1", "--retry", "0", "-o", output, server.url("/f.bin")])

        // THEN it says so, downloads anew from byte 0 and replaces the file with the server's, exit 0
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stderr.contains("does not match"), "stderr: \(result.stderr)")
        #expect(Disk.difference(output, body) == nil)
        #expect(server.requests.last?.header("Range") == nil)
        #expect(!Disk.exists(output + ".haul-partial"))
    }

    @Test func userFileStaysInPlaceUntilTheFreshDownloadCompletes() throws {
        // GIVEN an existing file that does not match, and a fresh download that is cut
        let server = try FaultServer()
        let body = TestData.bytes(count: 3 << 20, seed: 98)
        server.setResource("/f.bin", body: body)
        let directory = try TemporaryDirectory()
        let output = directory.file("f.bin")
        let existing = Array(repeating: UInt8(9), count: 500_000)
        try Disk.write(existing, to: output)
        // the overlap check's answer, then the fresh download cut after 1 MB
        server.enqueueFaults("/f.bin", [.normal, .dropAfter(bytes: 1_000_000)])

        // WHEN haul continues it and the fresh download is cut
        let first = try HaulBinary.run(["-q", "-c", "-x", "1", "--retry", "0", "-o", output, server.url("/f.bin")])

        // THEN the user's file is still there, untouched
        #expect(first.status == 3, "stderr: \(first.stderr)")
        #expect(Disk.difference(output, existing) == nil)
        // AND running the same command again finishes the fresh download and replaces the file
        let second = try HaulBinary.run(["-q", "-c", "-x", "1", "--retry", "0", "-o", output, server.url("/f.bin")])
        #expect(second.status == 0, "stderr: \(second.stderr)")
        #expect(Disk.difference(output, body) == nil)
    }

    @Test func completeFileAndAServerThatIgnoresRangeEndsWithExitZero() throws {
        // GIVEN the complete file already at the destination, and a server that ignores Range
        let server = try FaultServer()
        let body = TestData.bytes(count: 2 << 20, seed: 99)
        server.setResource("/f.bin", body: body)
        server.setPersistentFaults("/f.bin", [.ignoreRange])
        let directory = try TemporaryDirectory()
        let output = directory.file("f.bin")
        try Disk.write(body, to: output)

        // WHEN haul continues it
        let result = try HaulBinary.run(["-q", "-c", "-o", output, server.url("/f.bin")])

        // THEN the streamed body is compared with the file, which is identical: exit 0, file unchanged
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, body) == nil)
    }

    @Test func prefixFileAndAServerThatIgnoresRangeIsCompletedFromTheStream() throws {
        // GIVEN the first 1 MiB of the file at the destination, and a server that ignores Range
        let server = try FaultServer()
        let body = TestData.bytes(count: 2 << 20, seed: 100)
        server.setResource("/f.bin", body: body)
        server.setPersistentFaults("/f.bin", [.ignoreRange])
        let directory = try TemporaryDirectory()
        let output = directory.file("f.bin")
        try Disk.write(Array(body[0..<(1 << 20)]), to: output)

        // WHEN haul continues it
        let result = try HaulBinary.run(["-q", "-c", "-o", output, server.url("/f.bin")])

        // THEN the matching prefix is kept and the rest appended from the same response
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, body) == nil)
        #expect(server.requests.count == 1)
    }

    @Test(arguments: [false, true])
    func fileLongerThanTheServersIsLeftAloneAndOnlyForceReplacesIt(ignoresRange: Bool) throws {
        // GIVEN a local file 4 KiB longer than the server's (the server's file and more after it)
        let server = try FaultServer()
        let body = TestData.bytes(count: 1 << 20, seed: 101)
        server.setResource("/f.bin", body: body)
        if ignoresRange { server.setPersistentFaults("/f.bin", [.ignoreRange]) }
        let directory = try TemporaryDirectory()
        let output = directory.file("f.bin")
        let longer = body + TestData.bytes(count: 4096, seed: 102)
        try Disk.write(longer, to: output)

        // WHEN haul continues it
        let result = try HaulBinary.run(["-c", "-x", "1", "--retry", "0", "-o", output, server.url("/f.bin")])

        // THEN it cannot be a prefix of the server's file: it is left as it is, with both sizes said (exit 5)
        #expect(result.status == 5, "stderr: \(result.stderr)")
        #expect(result.stderr.contains("\(longer.count)") && result.stderr.contains("\(body.count)"), "stderr: \(result.stderr)")
        #expect(Disk.difference(output, longer) == nil)
        #expect(!Disk.exists(output + ".haul-partial"))
        // AND --force replaces it
        let forced = try HaulBinary.run(["-q", "--force", "-x", "1", "--retry", "0", "-o", output, server.url("/f.bin")])
        #expect(forced.status == 0, "stderr: \(forced.stderr)")
        #expect(Disk.difference(output, body) == nil)
    }
}
