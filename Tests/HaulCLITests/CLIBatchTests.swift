import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Batches: `haul URL URL ...` and `haul -i FILE` run many downloads through the queue store.
@Suite("haul batches", .serialized)
struct CLIBatchTests {
    /// Bytes a killed run may cost beyond what it kept: what sat in socket buffers and in curl.
    static let allowedWastePerKill = 4 << 20

    @Test(.timeLimit(.minutes(1)))
    func listWithAMalformedLineAndA404DownloadsTheRestAndExits4() throws {
        // GIVEN 20 small files, and a list of them with a comment, a malformed line and a URL that answers 404
        let server = try FaultServer()
        let count = 20
        let bodies = (0..<count).map { TestData.bytes(count: 1_000 + $0 * 3_001, seed: 100 + UInt64($0)) }
        for (index, body) in bodies.enumerated() { server.setResource(String(format: "/f%02d.bin", index), body: body) }
        let work = try TemporaryDirectory(prefix: "haul-cli-batch")
        let state = work.file("state")
        let out = work.file("out")
        var lines = ["# twenty files, one bad line, one missing file"]
        lines += (0..<10).map { server.url(String(format: "/f%02d.bin", $0)) }
        lines.append("ftp://example.com/not-http.bin")
        let malformedLine = lines.count
        lines += (10..<count).map { server.url(String(format: "/f%02d.bin", $0)) }
        lines.append(server.url("/missing.bin"))
        let list = work.file("list.txt")
        try lines.joined(separator: "\n").write(toFile: list, atomically: true, encoding: .utf8)

        // WHEN haul runs the list
        let result = try HaulBinary.run(["-i", list, "-j", "4", "-d", out, "--state", state, "--retry", "0"])

        // THEN every file is there bit-exact
        for (index, body) in bodies.enumerated() {
            let name = String(format: "f%02d.bin", index)
            #expect(Disk.difference(out + "/" + name, body) == nil, "\(name)")
        }
        #expect(!Disk.exists(out + "/missing.bin"))
        // AND stderr names the malformed line by file and number, and the 404
        #expect(result.stderr.contains("\(list):\(malformedLine):"), "stderr: \(result.stderr)")
        #expect(result.stderr.contains("(skipped)"), "stderr: \(result.stderr)")
        #expect(result.stderr.contains("404"), "stderr: \(result.stderr)")
        // AND the exit code is the first failure's: 4 for the HTTP error status
        #expect(result.status == 4, "stderr: \(result.stderr)")
        // AND the queue shows 20 completed and 1 failed with its error
        let listing = try StoreFixture(directory: state).items()
        #expect(listing.values.count == count + 1)
        #expect(listing.count(state: "completed") == count)
        let failed = listing.values.filter { $0["state"] as? String == "failed" }
        #expect(failed.count == 1)
        #expect((failed.first?["url"] as? String)?.hasSuffix("/missing.bin") == true, "failed: \(failed)")
        let lastError = failed.first?["lastError"] as? String
        #expect(lastError?.contains("404") == true, "lastError: \(lastError ?? "nil")")
        #expect(listing.values.filter { $0["state"] as? String == "completed" }.allSatisfy { $0["lastError"] is NSNull })
    }

    @Test(.timeLimit(.minutes(1)))
    func aListWithCRLFLineEndsDownloadsEveryLine() throws {
        // GIVEN three files and a list of them written on Windows (CR LF after every line), one with a name
        let server = try FaultServer()
        let bodies = (0..<3).map { TestData.bytes(count: 10_000 + $0, seed: 140 + UInt64($0)) }
        for (index, body) in bodies.enumerated() { server.setResource("/w\(index).bin", body: body) }
        let work = try TemporaryDirectory(prefix: "haul-cli-batch")
        let out = work.file("out")
        let list = work.file("list.txt")
        let lines = [server.url("/w0.bin"), server.url("/w1.bin") + " named.bin", "# a comment", server.url("/w2.bin")]
        try (lines.joined(separator: "\r\n") + "\r\n").write(toFile: list, atomically: true, encoding: .utf8)

        // WHEN haul runs the list
        let result = try HaulBinary.run(["-q", "-i", list, "-d", out, "--state", work.file("state"), "--retry", "0"])

        // THEN it succeeds, and each line's file is there bit-exact under its name, with no CR in any name
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(out + "/w0.bin", bodies[0]) == nil)
        #expect(Disk.difference(out + "/named.bin", bodies[1]) == nil)
        #expect(Disk.difference(out + "/w2.bin", bodies[2]) == nil)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: out)) ?? []
        #expect(names.sorted() == ["named.bin", "w0.bin", "w2.bin"], "names: \(names)")
    }

    @Test(.timeLimit(.minutes(1)))
    func listFromStandardInputIsDownloadedAndItsBadLineNamedStdin() throws {
        // GIVEN three files and a list of them on standard input, with a malformed second line
        let server = try FaultServer()
        let bodies = (0..<3).map { TestData.bytes(count: 20_000 + $0, seed: 120 + UInt64($0)) }
        for (index, body) in bodies.enumerated() { server.setResource("/in\(index).bin", body: body) }
        let work = try TemporaryDirectory(prefix: "haul-cli-batch")
        // (The output directory exists: a named line into a missing one is covered on its own below.)
        try FileManager.default.createDirectory(atPath: work.file("out"), withIntermediateDirectories: false)
        let list = work.file("list.txt")
        let text =
            [server.url("/in0.bin"), "not a url", server.url("/in1.bin") + " renamed.bin", server.url("/in2.bin")]
            .joined(separator: "\n") + "\n"
        try text.write(toFile: list, atomically: true, encoding: .utf8)

        // WHEN haul reads the list from stdin (-i -)
        let result = try BatchRun.withStandardInput(
            from: list, ["-q", "-i", "-", "-d", work.file("out"), "--state", work.file("state"), "--retry", "0"])

        // THEN every good line is downloaded (with its NAME), the bad one is named as stdin:2, and the exit is 2
        #expect(Disk.difference(work.file("out/in0.bin"), bodies[0]) == nil)
        #expect(Disk.difference(work.file("out/renamed.bin"), bodies[1]) == nil)
        #expect(Disk.difference(work.file("out/in2.bin"), bodies[2]) == nil)
        #expect(!Disk.exists(work.file("out/in1.bin")))
        #expect(result.stderr.contains("stdin:2:"), "stderr: \(result.stderr)")
        #expect(result.status == 2, "stderr: \(result.stderr)")
    }

    @Test(.timeLimit(.minutes(1)))
    func twoURLsOnTheCommandLineAreABatch() throws {
        // GIVEN two files
        let server = try FaultServer()
        let first = TestData.bytes(count: 33_333, seed: 130)
        let second = TestData.bytes(count: 44_444, seed: 131)
        server.setResource("/one.bin", body: first)
        server.setResource("/two.bin", body: second)
        let work = try TemporaryDirectory(prefix: "haul-cli-batch")

        // WHEN haul gets both URLs
        let result = try HaulBinary.run(
            ["-d", work.file("out"), "--state", work.file("state"), server.url("/one.bin"), server.url("/two.bin")])

        // THEN both are downloaded bit-exact, the exit is 0, and the store remembers both as completed
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(work.file("out/one.bin"), first) == nil)
        #expect(Disk.difference(work.file("out/two.bin"), second) == nil)
        #expect(result.stderr.contains("2 of 2 downloads complete"), "stderr: \(result.stderr)")
        let listing = try StoreFixture(directory: work.file("state")).items()
        #expect(listing.values.count == 2)
        #expect(listing.count(state: "completed") == 2)
    }

    @Test(.timeLimit(.minutes(1)))
    func duplicatedDestinationInOneListIsReportedAndSkipped() throws {
        // GIVEN a list where two different URLs name the same output file
        let server = try FaultServer()
        let kept = TestData.bytes(count: 10_000, seed: 140)
        let other = TestData.bytes(count: 12_000, seed: 141)
        let third = TestData.bytes(count: 14_000, seed: 142)
        server.setResource("/kept.bin", body: kept)
        server.setResource("/other.bin", body: other)
        server.setResource("/third.bin", body: third)
        let work = try TemporaryDirectory(prefix: "haul-cli-batch")
        try FileManager.default.createDirectory(atPath: work.file("out"), withIntermediateDirectories: false)
        let list = work.file("list.txt")
        try [server.url("/kept.bin") + " same.bin", server.url("/other.bin") + " same.bin", server.url("/third.bin")]
            .joined(separator: "\n").write(toFile: list, atomically: true, encoding: .utf8)

        // WHEN haul runs the list
        let result = try HaulBinary.run(
            ["-q", "-i", list, "-d", work.file("out"), "--state", work.file("state"), "--retry", "0"])

        // THEN the first line's file is downloaded, the duplicate is reported and never requested, the rest proceeds
        #expect(Disk.difference(work.file("out/same.bin"), kept) == nil)
        #expect(Disk.difference(work.file("out/third.bin"), third) == nil)
        #expect(result.stderr.contains("/other.bin"), "stderr: \(result.stderr)")
        #expect(result.stderr.contains("(skipped)"), "stderr: \(result.stderr)")
        #expect(!server.requests.contains { $0.path == "/other.bin" })
        let listing = try StoreFixture(directory: work.file("state")).items()
        #expect(listing.values.count == 2)
        // AND, as for any bad line of a list, the exit code is 2: not every line was downloaded
        #expect(result.status == 2, "stderr: \(result.stderr)")
    }

    @Test(.timeLimit(.minutes(1)))
    func aLongListIsCheckedWholeBeforeAnyOfItIsAdded() throws {
        // GIVEN a queued, paused download of one URL into out/taken.bin, and a list of 1,200 lines
        // (more than two of the batch's chunks) whose last line is another URL to that file and
        // whose line 1,101 repeats line 1's destination
        let server = try FaultServer()
        let work = try TemporaryDirectory(prefix: "haul-cli-batch")
        let out = work.file("out")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: false)
        let queued = try HaulBinary.run(["queue", "add", "--paused", "-o", work.file("out/taken.bin"), "--state", work.file("state"), server.url("/other.bin")])
        #expect(queued.status == 0, "stderr: \(queued.stderr)")
        var lines = (0..<1_200).map { server.url("/f\($0).bin") }
        lines[0] = server.url("/f0.bin") + " first.bin"
        lines[1_100] = server.url("/again.bin") + " first.bin"
        lines[1_199] = server.url("/f1199.bin") + " taken.bin"
        let list = work.file("list.txt")
        try lines.joined(separator: "\n").write(toFile: list, atomically: true, encoding: .utf8)

        // WHEN haul runs the list
        let result = try HaulBinary.run(["-q", "-i", list, "-d", out, "--state", work.file("state"), "--retry", "0"])

        // THEN the conflict is refused with its own exit code, before anything was added or fetched
        #expect(result.status == 7, "stderr: \(result.stderr.prefix(500))")
        #expect(result.stderr.contains("already used by queued download"), "stderr: \(result.stderr.prefix(500))")
        // AND the repeat of line 1's destination, in a later chunk than line 1, was seen as one
        #expect(result.stderr.contains("/again.bin: the same destination appears twice"), "stderr: \(result.stderr.prefix(500))")
        let listing = try StoreFixture(directory: work.file("state")).items()
        #expect(listing.values.count == 1, "items: \(listing.values.count)")
        #expect(server.requests.isEmpty, "requests: \(server.requests.count)")
    }

    @Test(.timeLimit(.minutes(1)))
    func rerunningAFinishedBatchFetchesNothingAgainAndSucceeds() throws {
        // GIVEN a batch of two files that has run to completion
        let server = try FaultServer()
        let first = TestData.bytes(count: 21_000, seed: 160)
        let second = TestData.bytes(count: 22_000, seed: 161)
        server.setResource("/r1.bin", body: first)
        server.setResource("/r2.bin", body: second)
        let work = try TemporaryDirectory(prefix: "haul-cli-batch")
        let arguments = ["-q", "-d", work.file("out"), "--state", work.file("state"), "--retry", "0", server.url("/r1.bin"), server.url("/r2.bin")]
        let done = try HaulBinary.run(arguments)
        #expect(done.status == 0, "stderr: \(done.stderr)")
        let requestsBefore = server.requests.count

        // WHEN the same command runs again
        let again = try HaulBinary.run(arguments)

        // THEN it succeeds without asking the server for anything, the files are intact, and no item was added
        #expect(again.status == 0, "stderr: \(again.stderr)")
        #expect(server.requests.count == requestsBefore, "requests: \(server.requests.map { "\($0.path) \($0.header("Range") ?? "-")" })")
        #expect(Disk.difference(work.file("out/r1.bin"), first) == nil)
        #expect(Disk.difference(work.file("out/r2.bin"), second) == nil)
        let listing = try StoreFixture(directory: work.file("state")).items()
        #expect(listing.values.count == 2, "items: \(listing.values)")
    }

    @Test(.timeLimit(.minutes(1)))
    func namedLinesAreSavedIntoADirectoryThatDoesNotExistYet() throws {
        // GIVEN a list whose every line names its output file, and -d naming a directory not yet there
        let server = try FaultServer()
        let first = TestData.bytes(count: 15_000, seed: 150)
        let second = TestData.bytes(count: 16_000, seed: 151)
        server.setResource("/a.bin", body: first)
        server.setResource("/b.bin", body: second)
        let work = try TemporaryDirectory(prefix: "haul-cli-batch")
        let list = work.file("list.txt")
        try [server.url("/a.bin") + " first.bin", server.url("/b.bin") + " second.bin"]
            .joined(separator: "\n").write(toFile: list, atomically: true, encoding: .utf8)

        // WHEN haul runs the list
        let result = try HaulBinary.run(["-q", "-i", list, "-d", work.file("new/dir"), "--state", work.file("state"), "--retry", "0"])

        // THEN the directory is created, as for lines without a name, and both files are saved there
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(work.file("new/dir/first.bin"), first) == nil)
        #expect(Disk.difference(work.file("new/dir/second.bin"), second) == nil)
    }

    @Test(.timeLimit(.minutes(2)))
    func aThousandSmallFilesFromNginxAreAllBitExact() throws {
        // GIVEN nginx serving 1,000 files of 4 to 16 KiB
        let root = try TemporaryDirectory(prefix: "haul-cli-nginx")
        let count = 1_000
        let sizes = (0..<count).map { 4_096 + ($0 * 7_919) % 12_289 }
        for index in 0..<count {
            try TestData.writeFile(at: root.file("n\(index).bin"), size: sizes[index], seed: 1_000 + UInt64(index))
        }
        let nginx = try NginxServer(documentRoot: root.path)
        let work = try TemporaryDirectory(prefix: "haul-cli-batch")
        let list = work.file("list.txt")
        try (0..<count).map { nginx.baseURL + "/n\($0).bin" }.joined(separator: "\n")
            .write(toFile: list, atomically: true, encoding: .utf8)
        let out = work.file("out")

        // WHEN haul runs them as one batch, 8 at a time
        let started = Date()
        let result = try HaulBinary.run(["-q", "-i", list, "-j", "8", "-d", out, "--state", work.file("state")], timeout: 110)
        let seconds = Date().timeIntervalSince(started)

        // THEN it succeeds and every file is bit-exact, with nothing else left in the directory
        #expect(result.status == 0, "stderr: \(result.stderr)")
        var wrong: [String] = []
        for index in 0..<count {
            if let difference = Disk.difference(out + "/n\(index).bin", TestData.bytes(count: sizes[index], seed: 1_000 + UInt64(index))) {
                wrong.append("n\(index).bin: \(difference)")
            }
        }
        #expect(wrong.isEmpty, "\(wrong.count) files differ, e.g. \(wrong.prefix(5))")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: out)) ?? []
        #expect(names.count == count, "\(names.filter { !$0.hasPrefix("n") }.prefix(5))")
        // AND each file was fetched exactly once
        _ = Disk.waitUntil(timeout: 5) { nginx.accessLog().count >= count }
        let log = nginx.accessLog()
        #expect(log.count == count)
        #expect(Set(log.map(\.uri)).count == count)
        print("1000-file batch took \(String(format: "%.1f", seconds)) s")
    }

    @Test(.timeLimit(.minutes(2)))
    func batchKilledRepeatedlyResumesEveryFileAndFetchesNoneTwiceFromScratch() throws {
        // GIVEN 20 files of 2 to 4 MiB served by nginx at 1 MiB/s per connection
        let root = try TemporaryDirectory(prefix: "haul-cli-nginx")
        let count = 20
        let sizes = (0..<count).map { (2 << 20) + ($0 * 104_729) % (2 << 20) }
        for index in 0..<count {
            try TestData.writeFile(at: root.file("k\(index).bin"), size: sizes[index], seed: 200 + UInt64(index))
        }
        let nginx = try NginxServer(documentRoot: root.path, limitRate: "1m")
        let work = try TemporaryDirectory(prefix: "haul-cli-batch")
        let list = work.file("list.txt")
        let uris = (0..<count).map { "/limited/k\($0).bin" }
        try uris.map { nginx.baseURL + $0 }.joined(separator: "\n").write(toFile: list, atomically: true, encoding: .utf8)
        let out = work.file("out")
        let arguments = ["-q", "-i", list, "-j", "4", "-d", out, "--state", work.file("state"), "--retry", "0"]

        // WHEN the batch is killed with SIGKILL at random moments, three times
        let kills = 3
        var generator = SystemRandomNumberGenerator()
        for round in 1...kills {
            let running = try RunningHaul(arguments)
            usleep(UInt32.random(in: 700_000...1_500_000, using: &generator))
            running.send(SIGKILL)
            let ending = try running.wait(timeout: 10)
            #expect(ending == .signalled(SIGKILL), "round \(round): \(ending), stderr: \(running.stderr)")
        }
        let finishedBeforeLastRun = (0..<count).filter { Disk.exists(out + "/k\($0).bin") }.count
        #expect(finishedBeforeLastRun < count, "the batch finished before it was killed")

        // WHEN it is run again, to the end
        let last = try HaulBinary.run(arguments, timeout: 60)

        // THEN it succeeds and every file is bit-exact, with no partial left behind
        #expect(last.status == 0, "stderr: \(last.stderr)")
        for index in 0..<count {
            let expected = TestData.bytes(count: sizes[index], seed: 200 + UInt64(index))
            #expect(Disk.difference(out + "/k\(index).bin", expected) == nil, "k\(index).bin")
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: out)) ?? []
        #expect(names.count == count, "left in the directory: \(names.filter { !$0.hasPrefix("k") })")
        // AND the re-runs reused the batch's items instead of adding them again
        let listing = try StoreFixture(directory: work.file("state")).items()
        #expect(listing.values.count == count, "\(listing.values.count) items in the queue for a batch of \(count)")
        #expect(listing.count(state: "completed") == count)

        // AND no file was downloaded twice from scratch: after its first request, every request for a
        // file carried a Range, except one that follows requests killed before they delivered anything
        // haul could keep (those sent at most a socket buffer's worth)
        _ = Disk.waitUntil(timeout: 5) { Set(nginx.accessLog().map(\.uri)).count >= count }
        let log = nginx.accessLog()
        var totalSent = 0
        for (index, uri) in uris.enumerated() {
            let entries = log.filter { $0.uri == uri }
            let sent = entries.reduce(0) { $0 + $1.bodyBytesSent }
            totalSent += sent
            #expect(sent >= sizes[index], "\(uri): nginx sent \(sent) of \(sizes[index]) bytes")
            var sentBefore = 0
            for (position, entry) in entries.enumerated() {
                if position > 0 && entry.range == nil {
                    #expect(
                        sentBefore <= 1 << 20,
                        "\(uri) was fetched from byte 0 again after \(sentBefore) bytes: \(entries.map { "\($0.range ?? "-") \($0.bodyBytesSent)" })")
                }
                sentBefore += entry.bodyBytesSent
            }
        }
        let wasted = totalSent - sizes.reduce(0, +)
        #expect(wasted <= Self.allowedWastePerKill * kills, "nginx sent \(wasted) bytes more than the files hold")
    }
}

// MARK: - helpers

/// Running `haul` with a file as its standard input.
enum BatchRun {
    /// Runs `haul ARGUMENTS < path` through /bin/sh (the path and arguments are passed as
    /// positional parameters, never interpolated into the script).
    static func withStandardInput(from path: String, _ arguments: [String], timeout: Double = 60) throws -> ProcessResult {
        try ProcessRunner.run("/bin/sh", ["-c", "exec \"$@\" < \"$0\"", path, try HaulBinary.path()] + arguments, timeout: timeout)
    }
}
