import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A full disk, met on a real small file system (a tmpfs), not a fake: haul exits 6, keeps what it
/// wrote with a usable record, and resumes once there is room; with a known length it refuses up front.
///
/// Mounting needs root; CI runs as root, so a failed mount fails these tests (it does not skip them).
@Suite("haul DiskFull", .serialized)
struct CLIDiskFullTests {
    static let mebibyte = 1 << 20

    // MARK: A: ENOSPC while writing

    @Test func bodyWithoutLengthStopsAtTheFreeSpaceMarginAndKeepsItsBytes() throws {
        // GIVEN a 6 MiB resource served chunked (no length to check up front) and an 8 MiB file system
        let server = try FaultServer()
        let body = TestData.bytes(count: 6 * Self.mebibyte, seed: 62)
        server.setResource("/big.bin", body: body)
        server.enqueueFaults("/big.bin", [.chunked])
        let small = try SmallFileSystem(sizeBytes: 8 * Self.mebibyte)
        defer { small.unmount() }
        let output = small.file("f")

        // WHEN haul downloads onto it keeping 4 MiB free
        let result = try HaulBinary.run(["-q", "--retry", "0", "--min-free-space", "4M", "-o", output, server.url("/big.bin")])

        // THEN it stops with exit 6 before the margin is eaten, keeping a correct prefix to resume from
        #expect(result.status == 6, "stderr: \(result.stderr)")
        #expect(result.stderr.contains("--min-free-space"), "stderr: \(result.stderr)")
        let partialSize = try #require(Disk.size(output + ".haul-partial"), "stderr: \(result.stderr)")
        #expect(partialSize > 0 && partialSize < Int64(body.count))
        #expect(Disk.difference(output + ".haul-partial", Array(body[0..<Int(partialSize)])) == nil)
        #expect(Disk.exists(output + ".haul-resume"))
    }

    @Test func fullDiskMidBodyKeepsThePartialAndResumesOnABiggerDisk() throws {
        // GIVEN a 3 MiB resource served chunked (no Content-Length, so no pre-check can refuse it)
        // and a 2 MiB file system
        let server = try FaultServer()
        let body = TestData.bytes(count: 3 * Self.mebibyte, seed: 61)
        server.setResource("/big.bin", body: body)
        server.enqueueFaults("/big.bin", [.chunked])
        let small = try SmallFileSystem(sizeBytes: 2 * Self.mebibyte)
        defer { small.unmount() }
        let output = small.file("f")

        // WHEN haul downloads onto it (no margin: the disk itself runs out)
        let first = try HaulBinary.run(["-q", "--retry", "0", "--min-free-space", "0", "-o", output, server.url("/big.bin")])

        // THEN it exits 6 saying the disk is full
        #expect(first.status == 6, "stderr: \(first.stderr)")
        #expect(Self.saysDiskIsFull(first.stderr), "stderr: \(first.stderr)")
        // AND keeps the partial and a readable record that claims no more than the partial holds
        #expect(!Disk.exists(output))
        let partialPath = output + ".haul-partial"
        let recordPath = output + ".haul-resume"
        let partialSize = try #require(Disk.size(partialPath), "no partial; stderr: \(first.stderr)")
        #expect(partialSize > Int64(Self.mebibyte), "the disk should have been filled before ENOSPC")
        #expect(partialSize < Int64(body.count))
        #expect(Disk.difference(partialPath, Array(body[0..<Int(partialSize)])) == nil)
        let record = try Self.record(at: recordPath)
        let synced = try #require(record["syncedLength"] as? NSNumber, "record: \(record)").int64Value
        #expect(synced <= partialSize)
        #expect(record["originalURL"] as? String == server.url("/big.bin"))

        // WHEN the partial and its record move, names unchanged, to a bigger file system and haul runs again
        let big = try SmallFileSystem(sizeBytes: 8 * Self.mebibyte)
        defer { big.unmount() }
        let moved = big.file("f")
        try Self.move(partialPath, to: moved + ".haul-partial")
        try Self.move(recordPath, to: moved + ".haul-resume")
        let requestsBefore = server.requests.count
        // --min-free-space 0: the 8 MiB disk is smaller than the default 16 MiB margin.
        let second = try HaulBinary.run(["-q", "--retry", "0", "--min-free-space", "0", "-o", moved, server.url("/big.bin")])

        // THEN it continues with a Range request from the end of the partial and completes bit-exact
        #expect(second.status == 0, "stderr: \(second.stderr)")
        #expect(Disk.difference(moved, body) == nil)
        #expect(!Disk.exists(moved + ".haul-partial"))
        #expect(!Disk.exists(moved + ".haul-resume"))
        let resumed = Array(server.requests.dropFirst(requestsBefore))
        #expect(resumed.count == 1)
        #expect(resumed.first?.header("Range") == "bytes=\(partialSize)-")
        #expect(resumed.first?.header("If-Range") == "\"v1\"")
    }

    // MARK: B: the --min-free-space pre-check (known length)

    @Test func knownLengthThatCannotFitIsRefusedBeforeAnyBodyByte() throws {
        // GIVEN a 3 MiB resource with a Content-Length and a 2 MiB file system
        let server = try FaultServer()
        server.setResource("/big.bin", body: TestData.bytes(count: 3 * Self.mebibyte, seed: 62))
        let small = try SmallFileSystem(sizeBytes: 2 * Self.mebibyte)
        defer { small.unmount() }
        let output = small.file("f")

        // WHEN haul downloads onto it with the default margin
        let result = try HaulBinary.run(["-q", "--retry", "0", "-o", output, server.url("/big.bin")])

        // THEN it exits 6 without writing a body byte, naming the space needed and available
        #expect(result.status == 6, "stderr: \(result.stderr)")
        #expect(!Disk.exists(output))
        #expect((Disk.size(output + ".haul-partial") ?? 0) == 0, "body bytes were written before refusing")
        Self.expectNamesNeededAndAvailable(result.stderr, needed: 3 * Self.mebibyte, available: 2 * Self.mebibyte)
    }

    @Test func zeroMarginStillRefusesAFileLargerThanTheDisk() throws {
        // GIVEN a 3 MiB resource with a Content-Length and a 2 MiB file system
        let server = try FaultServer()
        server.setResource("/big.bin", body: TestData.bytes(count: 3 * Self.mebibyte, seed: 63))
        let small = try SmallFileSystem(sizeBytes: 2 * Self.mebibyte)
        defer { small.unmount() }
        let output = small.file("f")

        // WHEN haul downloads onto it with no margin at all
        let result = try HaulBinary.run(
            ["-q", "--retry", "0", "--min-free-space", "0", "-o", output, server.url("/big.bin")])

        // THEN 3 MiB still cannot fit in 2 MiB: exit 6 before any body byte
        #expect(result.status == 6, "stderr: \(result.stderr)")
        #expect(!Disk.exists(output))
        #expect((Disk.size(output + ".haul-partial") ?? 0) == 0, "body bytes were written before refusing")
        Self.expectNamesNeededAndAvailable(result.stderr, needed: 3 * Self.mebibyte, available: 2 * Self.mebibyte)
    }

    @Test func fileThatFitsIsDownloadedWithZeroMargin() throws {
        // GIVEN a 1 MiB resource with a Content-Length and a 2 MiB file system
        let server = try FaultServer()
        let body = TestData.bytes(count: Self.mebibyte, seed: 64)
        server.setResource("/small.bin", body: body)
        let small = try SmallFileSystem(sizeBytes: 2 * Self.mebibyte)
        defer { small.unmount() }
        let output = small.file("f")

        // WHEN haul downloads onto it with no margin
        let result = try HaulBinary.run(
            ["-q", "--retry", "0", "--min-free-space", "0", "-o", output, server.url("/small.bin")])

        // THEN it completes bit-exact and leaves nothing behind
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, body) == nil)
        #expect(!Disk.exists(output + ".haul-partial"))
        #expect(!Disk.exists(output + ".haul-resume"))
    }

    // MARK: the test file system itself

    @Test func smallFileSystemReallyIsSmall() throws {
        // GIVEN a 1 MiB tmpfs WHEN writing 2 MiB to it THEN the kernel refuses the excess
        let disk = try SmallFileSystem(sizeBytes: Self.mebibyte)
        #expect(SmallFileSystem.isAvailable)
        let path = disk.file("fill")
        #expect(throws: TestSupportError.self) {
            try TestData.writeFile(at: path, size: 2 * Self.mebibyte)
        }
        #expect((Disk.size(path) ?? 0) <= Int64(Self.mebibyte))
        // WHEN it is unmounted (twice) THEN the mount point is gone
        disk.unmount()
        disk.unmount()
        #expect(!Disk.exists(disk.path))
    }

    // MARK: helpers

    /// Whether an error message says the disk is full, in words a person recognises.
    static func saysDiskIsFull(_ text: String) -> Bool {
        let lower = text.lowercased()
        return lower.contains("no space") || lower.contains("disk is full") || lower.contains("disk full")
            || lower.contains("is full")
    }

    /// Checks that `text` talks about space and states a quantity of at least `needed` bytes and one
    /// between half of `available` and `available` bytes (the free space of an empty file system), written as bytes ("3145728") or with a binary
    /// unit ("3.0 MiB", "2 MiB", "2048 KiB").
    static func expectNamesNeededAndAvailable(
        _ text: String, needed: Int, available: Int, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let lower = text.lowercased()
        #expect(lower.contains("space") || lower.contains("full"), "stderr: \(text)", sourceLocation: sourceLocation)
        let amounts = quantities(in: text)
        #expect(
            amounts.contains { $0 >= Double(needed) }, "no amount of at least \(needed) bytes in: \(text)",
            sourceLocation: sourceLocation)
        #expect(
            amounts.contains { $0 >= Double(available / 2) && $0 <= Double(available) },
            "no amount between \(available / 2) and \(available) bytes in: \(text)", sourceLocation: sourceLocation)
    }

    /// Every byte quantity in `text`: a number optionally followed by B, KiB/KB/K, MiB/MB/M, GiB/GB/G.
    static func quantities(in text: String) -> [Double] {
        guard
            let pattern = try? NSRegularExpression(
                pattern: #"(?<![\w.])([0-9][0-9,]*(?:\.[0-9]+)?)\s*(kib|kb|k|mib|mb|m|gib|gb|g)?\b"#,
                options: [.caseInsensitive])
        else { return [] }
        let range = NSRange(text.startIndex..., in: text)
        return pattern.matches(in: text, range: range).compactMap { match in
            guard let numberRange = Range(match.range(at: 1), in: text),
                let number = Double(text[numberRange].replacingOccurrences(of: ",", with: ""))
            else { return nil }
            let unit = Range(match.range(at: 2), in: text).map { text[$0].lowercased() } ?? ""
            switch unit.first {
            case "k": return number * 1024
            case "m": return number * 1024 * 1024
            case "g": return number * 1024 * 1024 * 1024
            default: return number
            }
        }
    }

    /// The resume record at `path`, parsed as a JSON object.
    static func record(at path: String) throws -> [String: Any] {
        let data = try #require(FileManager.default.contents(atPath: path), "no resume record at \(path)")
        let object = try JSONSerialization.jsonObject(with: data)
        return try #require(object as? [String: Any], "the record is not a JSON object")
    }

    /// Moves a file across file systems with `mv` (a plain rename cannot cross them).
    static func move(_ source: String, to destination: String) throws {
        let result = try ProcessRunner.run("/bin/mv", ["--", source, destination])
        guard result.status == 0 else {
            throw TestSupportError("mv \(source) \(destination) failed with status \(result.status): \(result.stderr)")
        }
    }
}
