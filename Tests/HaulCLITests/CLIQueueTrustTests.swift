import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The queue keeps the whole request, never takes a file it cannot prove its own, never deletes
/// another item's data, never loses a file to a name collision, and keeps secrets private.
@Suite("haul queue trust", .serialized)
struct CLIQueueTrustTests {
    @Test func queuedChecksumIsKeptAndChecked() throws {
        // GIVEN a download queued with a checksum that cannot match
        let server = try FaultServer()
        server.setResource("/f.bin", body: TestData.bytes(count: 100_000, seed: 201))
        let work = try TemporaryDirectory(prefix: "haul-qtrust")
        let state = work.file("state")
        let output = work.file("out.bin")
        let zeros = String(repeating: "0", count: 64)
        let added = try HaulBinary.run(["queue", "add", "--state", state, "--checksum", "sha256=\(zeros)", "-o", output, server.url("/f.bin")])
        #expect(added.status == 0, "stderr: \(added.stderr)")

        // WHEN the queue runs
        let run = try HaulBinary.run(["queue", "run", "-q", "--retry", "0", "--state", state])

        // THEN the checksum fails the item (exit 8), the file is not put in place, the bytes are set aside
        #expect(run.status == 8, "stderr: \(run.stderr)")
        #expect(!Disk.exists(output))
        #expect(Disk.exists(output + ".haul-rejected"))
    }

    @Test func queuedMaxSizeAndRangeAreKept() throws {
        // GIVEN a 2 MiB file queued with --max-size 1M, and a range download of bytes 10-19
        let server = try FaultServer()
        let body = TestData.bytes(count: 2 << 20, seed: 202)
        server.setResource("/big.bin", body: body)
        let work = try TemporaryDirectory(prefix: "haul-qtrust")
        let state = work.file("state")
        let big = work.file("big.bin")
        let part = work.file("part.bin")
        #expect(try HaulBinary.run(["queue", "add", "--state", state, "--max-size", "1M", "-o", big, server.url("/big.bin")]).status == 0)
        #expect(try HaulBinary.run(["queue", "add", "--state", state, "--range", "10-19", "-o", part, server.url("/big.bin")]).status == 0)

        // WHEN the queue runs
        let run = try HaulBinary.run(["queue", "run", "-q", "--retry", "0", "--state", state])

        // THEN the size limit refused the first (exit 10) and the second has exactly its ten bytes
        #expect(run.status == 10, "stderr: \(run.stderr)")
        #expect(!Disk.exists(big))
        #expect(Disk.bytes(part) == Array(body[10...19]))
    }

    @Test func batchRerunDoesNotOverwriteTheFileItRefused() throws {
        // GIVEN dl/x.bin, a user's file, and a batch whose first URL's Content-Disposition names x.bin
        let server = try FaultServer()
        server.setResource("/one", body: TestData.bytes(count: 50_000, seed: 203), extraHeaders: [("Content-Disposition", "attachment; filename=\"x.bin\"")])
        server.setResource("/two.bin", body: TestData.bytes(count: 50_000, seed: 204))
        let work = try TemporaryDirectory(prefix: "haul-qtrust")
        let state = work.file("state")
        let directory = work.file("dl")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let precious = Array("MY PRECIOUS THESIS".utf8)
        try Disk.write(precious, to: directory + "/x.bin")
        let arguments = ["-q", "--retry", "0", "--state", state, "-d", directory, server.url("/one"), server.url("/two.bin")]

        // WHEN the batch runs twice
        let first = try HaulBinary.run(arguments)
        let second = try HaulBinary.run(arguments)

        // THEN both runs refuse x.bin (exit 7) and the user's file is untouched
        #expect(first.status == 7, "stderr: \(first.stderr)")
        #expect(second.status == 7, "stderr: \(second.stderr)")
        #expect(Disk.difference(directory + "/x.bin", precious) == nil)
        #expect(Disk.exists(directory + "/two.bin"))
    }

    @Test func removingACancelledItemLeavesTheRunningItemsPartial() throws {
        // GIVEN item 1 for out.bin cancelled, and item 2 for out.bin added again and running slowly
        let server = try FaultServer()
        let body = TestData.bytes(count: 3 << 20, seed: 205)
        server.setResource("/f.bin", body: body)
        server.setPersistentFaults("/f.bin", [.throttle(bytesPerSecond: 1_500_000)])
        let work = try TemporaryDirectory(prefix: "haul-qtrust")
        let state = work.file("state")
        let output = work.file("out.bin")
        #expect(try HaulBinary.run(["queue", "add", "--state", state, "-x", "1", "-o", output, server.url("/f.bin")]).status == 0)
        #expect(try HaulBinary.run(["queue", "cancel", "--state", state, "1"]).status == 0)
        #expect(try HaulBinary.run(["queue", "add", "--state", state, "-x", "1", "-o", output, server.url("/f.bin")]).status == 0)
        let run = try RunningHaul(["queue", "run", "-q", "--retry", "0", "--state", state])
        #expect(Disk.waitUntil(timeout: 10) { (Disk.size(output + ".haul-partial") ?? 0) > 200_000 })

        // WHEN item 1 is removed during the run
        let removed = try HaulBinary.run(["queue", "rm", "--state", state, "1"])

        // THEN item 2's data stays and it completes bit-exact
        #expect(removed.status == 0, "stderr: \(removed.stderr)")
        #expect(try run.wait() == .exited(0), "stderr: \(run.stderr)")
        #expect(Disk.difference(output, body) == nil)
    }

    @Test func cancelDeleteAfterContinueIntoADirectoryDeletesThePartialTheRunnerWrote() throws {
        // GIVEN a -c -d download queued and interrupted, so its partial exists
        let server = try FaultServer()
        server.setResource("/c.bin", body: TestData.bytes(count: 2 << 20, seed: 206))
        server.enqueueFaults("/c.bin", [.dropAfter(bytes: 1_200_000)])
        let work = try TemporaryDirectory(prefix: "haul-qtrust")
        let state = work.file("state")
        let directory = work.file("dl")
        #expect(try HaulBinary.run(["queue", "add", "--state", state, "-c", "-d", directory, server.url("/c.bin")]).status == 0)
        _ = try HaulBinary.run(["queue", "run", "-q", "--retry", "0", "--state", state])
        let partials = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".haul-partial") }
        #expect(partials.count == 1, "\(partials)")

        // WHEN it is cancelled with --delete
        let cancelled = try HaulBinary.run(["queue", "cancel", "--state", state, "--delete", "1"])

        // THEN that partial is gone
        #expect(cancelled.status == 0, "stderr: \(cancelled.stderr)")
        let left = try FileManager.default.contentsOfDirectory(atPath: directory).filter {
            $0.hasPrefix(".haul") || $0.hasSuffix(".haul-partial") || $0.hasSuffix(".haul-resume")
        }
        #expect(left.isEmpty, "\(left)")
    }

    @Test func collidingNamesInOneBatchBothSurvive() throws {
        // GIVEN two URLs whose Content-Disposition both name report.pdf
        let server = try FaultServer()
        let first = TestData.bytes(count: 40_000, seed: 207)
        let second = TestData.bytes(count: 41_000, seed: 208)
        server.setResource("/a", body: first, extraHeaders: [("Content-Disposition", "attachment; filename=\"report.pdf\"")])
        server.setResource("/b", body: second, extraHeaders: [("Content-Disposition", "attachment; filename=\"report.pdf\"")])
        let work = try TemporaryDirectory(prefix: "haul-qtrust")
        let directory = work.file("dl")

        // WHEN they download in one batch
        let result = try HaulBinary.run(["--retry", "0", "--state", work.file("state"), "-j", "2", "-d", directory, server.url("/a"), server.url("/b")])

        // THEN both files exist, one under a unique name, and haul says so
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(names == ["report (1).pdf", "report.pdf"], "\(names)")
        let contents = Set(names.compactMap { Disk.bytes(directory + "/" + $0) })
        #expect(contents == Set([first, second]))
        #expect(result.stderr.contains("report (1).pdf"), "stderr: \(result.stderr)")
    }

    @Test func secretsAreNotKeptReadableOrPrinted() throws {
        // GIVEN a queued download with a password in the URL, an Authorization header and a body
        let server = try FaultServer()
        server.setResource("/s.bin", body: TestData.bytes(count: 30_000, seed: 209))
        let work = try TemporaryDirectory(prefix: "haul-qtrust")
        let state = work.file("state")
        let output = work.file("s.bin")
        let url = server.url("/s.bin").replacingOccurrences(of: "http://", with: "http://alice:hunter2@")
        let added = try HaulBinary.run([
            "queue", "add", "--state", state, "-H", "Authorization: Bearer TOPSECRET", "--data", "pw=hunter2", "-X", "GET", "-o", output, url,
        ])
        #expect(added.status == 0, "stderr: \(added.stderr)")

        // THEN the state directory is 0700 and the database 0600
        #expect(Self.mode(state) == 0o700)
        #expect(Self.mode(state + "/haul.sqlite") == 0o600)
        // AND queue list (plain and --json) shows no secret
        let list = try HaulBinary.run(["queue", "list", "--state", state])
        let json = try HaulBinary.run(["queue", "list", "--json", "--state", state])
        for text in [list.stdoutString + list.stderr, json.stdoutString + json.stderr] {
            #expect(!text.contains("hunter2"), "\(text)")
            #expect(!text.contains("TOPSECRET"), "\(text)")
        }

        // WHEN it runs with --json
        let run = try HaulBinary.run(["queue", "run", "--json", "--retry", "0", "--state", state])

        // THEN the events show no secret, and once done the database holds none
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(!run.stdoutString.contains("hunter2") && !run.stderr.contains("hunter2"), "\(run.stdoutString)")
        let database = try Data(contentsOf: URL(fileURLWithPath: state + "/haul.sqlite"))
        let wal = (try? Data(contentsOf: URL(fileURLWithPath: state + "/haul.sqlite-wal"))) ?? Data()
        for data in [database, wal] {
            #expect(data.range(of: Data("hunter2".utf8)) == nil)
            #expect(data.range(of: Data("TOPSECRET".utf8)) == nil)
        }
    }

    @Test func incompleteFilesArePrivateAndTheFinishedFileIsNot() throws {
        // GIVEN a download cut after 1.5 MB
        let server = try FaultServer()
        let body = TestData.bytes(count: 3 << 20, seed: 213)
        server.setResource("/p.bin", body: body)
        server.enqueueFaults("/p.bin", [.dropAfter(bytes: 1_500_000)])
        let work = try TemporaryDirectory(prefix: "haul-qtrust")
        let output = work.file("p.bin")
        let arguments = ["-q", "-x", "1", "--retry", "0", "-o", output, server.url("/p.bin")]
        #expect(try HaulBinary.run(arguments).status == 3)

        // THEN the partial and its record are 0600
        #expect(Self.mode(output + ".haul-partial") == 0o600)
        #expect(Self.mode(output + ".haul-resume") == 0o600)

        // WHEN it completes THEN the file has the usual mode (0666 less the umask)
        #expect(try HaulBinary.run(arguments).status == 0)
        let mask = umask(0o022)
        umask(mask)
        #expect(Self.mode(output) == 0o666 & ~mask)
    }

    static func mode(_ path: String) -> mode_t? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o777
    }
}

@Suite("haul progress")
struct CLIProgressTests {
    @Test func segmentedDownloadCountsEveryConnection() throws {
        // GIVEN a 12 MiB file served to each connection at 4 MB/s
        let server = try FaultServer()
        let body = TestData.bytes(count: 12 << 20, seed: 210)
        server.setResource("/f.bin", body: body)
        server.setPersistentFaults("/f.bin", [.throttle(bytesPerSecond: 4_000_000)])
        let work = try TemporaryDirectory(prefix: "haul-progress")
        let output = work.file("f.bin")

        // WHEN haul downloads it over 4 connections with --json
        let result = try HaulBinary.run(["--json", "-x", "4", "--retry", "0", "-o", output, server.url("/f.bin")])

        // THEN the completion counts the bytes of every connection, and its speed is more than one
        // connection could give
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, body) == nil)
        let completed = try #require(JSONLines.parse(result.stdoutString).last { $0["event"] as? String == "completed" })
        let transferred = try #require((completed["bytesTransferred"] as? NSNumber)?.int64Value)
        let seconds = try #require((completed["seconds"] as? NSNumber)?.doubleValue)
        #expect(transferred >= Int64(body.count), "bytesTransferred \(transferred)")
        #expect(Double(transferred) / seconds > 6_000_000, "\(transferred) bytes in \(seconds) s")
    }
}
