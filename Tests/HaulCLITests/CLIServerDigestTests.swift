import Foundation
import HaulChecksum
import HaulCore
import HaulTestSupport
import Testing

/// Digests the server publishes, verified without being asked: a wrong one keeps the data as the
/// partial and exits 8, a right one is named in the completion.
@Suite("Server-published digests")
struct CLIServerDigestTests {
    static let body = TestData.bytes(count: 3 << 20, seed: 909)

    static func digest(_ algorithm: ChecksumAlgorithm, _ bytes: [UInt8]) -> [UInt8] {
        let hash = StreamingHash(algorithm)
        bytes.withUnsafeBytes { hash.update($0) }
        let hex = Array(hash.finalizeHex().utf8)
        return stride(from: 0, to: hex.count, by: 2).map { UInt8(String(decoding: hex[$0..<$0 + 2], as: UTF8.self), radix: 16) ?? 0 }
    }

    static func base64(_ algorithm: ChecksumAlgorithm, _ bytes: [UInt8] = body) -> String {
        Data(digest(algorithm, bytes)).base64EncodedString()
    }

    static let wrong = body.map { $0 ^ 1 }

    static func completed(_ stdout: String) -> String? {
        stdout.split(separator: "\n").first { $0.contains("\"event\":\"completed\"") }.map(String.init)
    }

    @Test(.timeLimit(.minutes(1)), arguments: [1, 4])
    func aRightReprDigestIsVerifiedAndNamed(_ connections: Int) throws {
        let server = try FaultServer()
        server.setResource("/f.bin", body: Self.body, extraHeaders: [("Repr-Digest", "sha-256=:\(Self.base64(.sha256)):")])
        let work = try TemporaryDirectory(prefix: "haul-digest-ok")
        let result = try HaulBinary.run(["--json", "-x", String(connections), "-o", work.file("f.bin"), server.url("/f.bin")])
        #expect(result.status == 0, "\(result.stderr)")
        let done = try #require(Self.completed(result.stdoutString), "\(result.stdoutString)")
        #expect(done.contains("sha256:") && done.contains("Repr-Digest"), "\(done)")
        #expect(Disk.difference(work.file("f.bin"), Self.body) == nil)
        // Haul asks for it
        #expect(server.requests.allSatisfy { $0.header("Want-Repr-Digest") == "sha-256=10" })
    }

    @Test(.timeLimit(.minutes(1)))
    func aWrongDigestKeepsThePartialAndExits8UnlessTurnedOff() throws {
        let server = try FaultServer()
        server.setResource("/f.bin", body: Self.body, extraHeaders: [("Repr-Digest", "sha-256=:\(Self.base64(.sha256, Self.wrong)):")])
        let work = try TemporaryDirectory(prefix: "haul-digest-bad")
        let result = try HaulBinary.run(["-q", "-x", "1", "-o", work.file("f.bin"), server.url("/f.bin")])
        #expect(result.status == 8, "\(result.status): \(result.stderr)")
        #expect(result.stderr.contains("Repr-Digest") && result.stderr.contains("mismatch"), "\(result.stderr)")
        #expect(!Disk.exists(work.file("f.bin")))
        #expect(Disk.difference(work.file("f.bin.haul-rejected"), Self.body) == nil)
        // --no-server-digest: the same server, not checked (and not asked)
        let unchecked = try HaulBinary.run(["-q", "--no-server-digest", "-o", work.file("g.bin"), server.url("/f.bin")])
        #expect(unchecked.status == 0, "\(unchecked.stderr)")
        #expect(server.requests.last?.header("Want-Repr-Digest") == nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func theFirstResponsesDigestIsCheckedAfterAResumeThatDoesNotRepeatIt() throws {
        // GIVEN a first response that publishes a (wrong) digest and drops after 2 MiB, and
        // resumed responses that publish none
        let server = try FaultServer()
        server.setResource("/f.bin", body: Self.body)
        server.enqueueFaults(
            "/f.bin", [.combined([.header(name: "Repr-Digest", value: "sha-256=:\(Self.base64(.sha256, Self.wrong)):"), .dropAfter(bytes: 2 << 20)])])
        let work = try TemporaryDirectory(prefix: "haul-digest-resume")
        let first = try HaulBinary.run(["-q", "-x", "1", "--retry", "0", "-o", work.file("f.bin"), server.url("/f.bin")])
        #expect(first.status == 3, "\(first.stderr)")
        // WHEN the download is resumed
        let second = try HaulBinary.run(["-q", "-x", "1", "-o", work.file("f.bin"), server.url("/f.bin")])
        // THEN it was resumed with a range, and the digest of the first response still decides
        #expect(server.requests.last?.header("Range") != nil)
        #expect(second.status == 8, "\(second.status): \(second.stderr)")
    }

    @Test(.timeLimit(.minutes(1)))
    func cloudChecksumsAreVerifiedAndMultipartOnesAreOnlyReported() throws {
        let server = try FaultServer()
        server.setResource("/s3.bin", body: Self.body, extraHeaders: [("x-amz-checksum-crc64nvme", Self.base64(.crc64nvme))])
        server.setResource("/gcs.bin", body: Self.body, extraHeaders: [("x-goog-hash", "crc32c=\(Self.base64(.crc32c, Self.wrong))")])
        server.setResource("/multi.bin", body: Self.body, extraHeaders: [("x-amz-checksum-crc32c", Self.base64(.crc32c) + "-3")])
        let work = try TemporaryDirectory(prefix: "haul-digest-cloud")

        let s3 = try HaulBinary.run(["--json", "--s3-checksums", "-o", work.file("s3.bin"), server.url("/s3.bin")])
        #expect(s3.status == 0, "\(s3.stderr)")
        #expect(Self.completed(s3.stdoutString)?.contains("crc64nvme:") == true, "\(s3.stdoutString)")
        #expect(server.requests.first { $0.path == "/s3.bin" }?.header("x-amz-checksum-mode") == "ENABLED")

        let gcs = try HaulBinary.run(["-q", "-o", work.file("gcs.bin"), server.url("/gcs.bin")])
        #expect(gcs.status == 8 && gcs.stderr.contains("x-goog-hash"), "\(gcs.status): \(gcs.stderr)")

        let multi = try HaulBinary.run(["--json", "-o", work.file("multi.bin"), server.url("/multi.bin")])
        #expect(multi.status == 0, "\(multi.stderr)")
        #expect(multi.stdoutString.contains("multipart"), "the response should say the multipart checksum was not verified")
        #expect(Disk.difference(work.file("multi.bin"), Self.body) == nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func nginxWithARightAndAWrongReprDigest() throws {
        let work = try TemporaryDirectory(prefix: "haul-digest-nginx")
        try FileManager.default.createDirectory(atPath: work.file("www"), withIntermediateDirectories: true)
        try Disk.write(Self.body, to: work.file("www/right.bin"))
        try Disk.write(Self.body, to: work.file("www/wrong.bin"))
        let nginx = try NginxServer(
            documentRoot: work.file("www"),
            headers: [
                "/right.bin": ["Repr-Digest": "sha-256=:\(Self.base64(.sha256)):"],
                "/wrong.bin": ["Repr-Digest": "sha-512=:\(Self.base64(.sha512, Self.wrong)):"],
            ])
        defer { nginx.stop() }
        let right = try HaulBinary.run(["--json", "-o", work.file("right.bin"), nginx.baseURL + "/right.bin"])
        #expect(right.status == 0, "\(right.stderr)")
        #expect(Self.completed(right.stdoutString)?.contains("Repr-Digest") == true)
        let wrong = try HaulBinary.run(["-q", "-o", work.file("wrong.bin"), nginx.baseURL + "/wrong.bin"])
        #expect(wrong.status == 8 && wrong.stderr.contains("sha512 mismatch"), "\(wrong.status): \(wrong.stderr)")
        #expect(Disk.difference(work.file("wrong.bin.haul-rejected"), Self.body) == nil)
    }

    @Test(.timeLimit(.minutes(1)), arguments: ["0-99999", "-100000", "3000000-"])
    func aWholeFileDigestIsNotCheckedAgainstARange(_ range: String) throws {
        // GIVEN a server that publishes the whole file's correct digest, in each header Haul reads
        let server = try FaultServer()
        server.setResource(
            "/f.bin", body: Self.body,
            extraHeaders: [
                ("Repr-Digest", "sha-256=:\(Self.base64(.sha256)):"), ("Digest", "SHA-256=\(Self.base64(.sha256))"),
                ("x-goog-hash", "md5=\(Self.base64(.md5))"),
            ])
        let work = try TemporaryDirectory(prefix: "haul-digest-range")
        // WHEN a byte range is downloaded
        let result = try HaulBinary.run(["-q", "-r", range, "-o", work.file("part.bin"), server.url("/f.bin")])
        // THEN the range gets its name (the digest describes other bytes: it is not checked)
        #expect(result.status == 0, "\(result.status): \(result.stderr)")
        let expected: [UInt8]
        switch range {
        case "0-99999": expected = Array(Self.body[0..<100_000])
        case "-100000": expected = Array(Self.body[(Self.body.count - 100_000)...])
        default: expected = Array(Self.body[3_000_000...])
        }
        #expect(Disk.difference(work.file("part.bin"), expected) == nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func aPartialProvenBadIsNeverCheckedAgainTheNextRunFetchesAfresh() throws {
        // GIVEN a server whose file changes after the first download: the first copy fails the
        // digest the server published with it, the file then comes right
        let server = try FaultServer()
        server.setResource("/f.bin", body: Self.wrong, extraHeaders: [("Repr-Digest", "sha-256=:\(Self.base64(.sha256)):")])
        let work = try TemporaryDirectory(prefix: "haul-digest-again")
        let first = try HaulBinary.run(["-q", "-x", "1", "-o", work.file("f.bin"), server.url("/f.bin")])
        #expect(first.status == 8, "\(first.status): \(first.stderr)")
        // THEN the message says where the bad bytes are and that the next run starts anew
        #expect(first.stderr.contains("f.bin.haul-rejected") && first.stderr.contains("anew"), "\(first.stderr)")
        #expect(!Disk.exists(work.file("f.bin.haul-partial")))

        // WHEN the same command runs again, the server now sending the right bytes
        server.setResource("/f.bin", body: Self.body, extraHeaders: [("Repr-Digest", "sha-256=:\(Self.base64(.sha256)):")])
        let second = try HaulBinary.run(["-q", "-x", "1", "-o", work.file("f.bin"), server.url("/f.bin")])
        // THEN it fetched the file afresh (no Range: the bad bytes were not trusted) and it is right
        #expect(second.status == 0, "\(second.status): \(second.stderr)")
        #expect(server.requests.last?.header("Range") == nil)
        #expect(Disk.difference(work.file("f.bin"), Self.body) == nil)
    }
}
