import Foundation
import Haul
import HaulCore
import HaulTestSupport
import Testing

// What is already on disk (an existing destination), and downloads of a byte range.
extension DownloadFaultTests {
    @Test("an existing destination is refused by default and left untouched")
    func existingFileRefused() async throws {
        // GIVEN a file already at the destination
        let server = try FaultServer()
        server.setResource(FaultHarness.path, body: TestData.bytes(count: 100_000, seed: 51))
        let directory = try TemporaryDirectory()
        let destination = directory.file("exists.bin")
        let original = TestData.bytes(count: 5000, seed: 52)
        try FaultHarness.write(original, to: destination)

        // WHEN it is downloaded with the default policy
        let watched = try await FaultHarness.run(FaultHarness.request(server, to: .file(destination)))

        // THEN it fails before any request, and the file is as it was
        #expect(watched.error?.category == .destinationExists)
        #expect(server.requests.isEmpty)
        FaultHarness.expectFile(destination, equals: original)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["exists.bin"])
    }

    @Test("an existing destination is replaced with .overwrite")
    func existingFileOverwritten() async throws {
        // GIVEN a file already at the destination, longer than the resource
        let server = try FaultServer()
        let body = TestData.bytes(count: 100_000, seed: 53)
        server.setResource(FaultHarness.path, body: body)
        let directory = try TemporaryDirectory()
        let destination = directory.file("replace.bin")
        try FaultHarness.write(TestData.bytes(count: 200_000, seed: 54), to: destination)

        // WHEN it is downloaded with .overwrite
        let watched = try await FaultHarness.run(
            FaultHarness.request(server, to: .file(destination), existingFile: .overwrite))

        // THEN the file is exactly the resource, and nothing else is left
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        FaultHarness.expectFile(destination, equals: body)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["replace.bin"])
    }

    @Test("continuing a correct prefix left by another tool verifies its tail and appends the rest")
    func continueCorrectPrefix() async throws {
        // GIVEN the first 1,500,000 bytes of the resource at the destination, with no record
        let server = try FaultServer()
        let body = TestData.bytes(count: 2 << 20, seed: 55)
        server.setResource(FaultHarness.path, body: body)
        let directory = try TemporaryDirectory()
        let destination = directory.file("continued.bin")
        try FaultHarness.write(Array(body[0..<1_500_000]), to: destination)

        // WHEN it is downloaded with .continueIt
        let watched = try await FaultHarness.run(
            FaultHarness.request(server, to: .file(destination), existingFile: .continueIt))

        // THEN the last 64 KiB were re-fetched unguarded to prove the prefix, and the file is complete
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        #expect(watched.restartCodes.isEmpty)
        FaultHarness.expectFile(destination, equals: body)
        let requests = FaultHarness.requests(server)
        #expect(requests.map { $0.header("Range") } == ["bytes=\(1_500_000 - 65536)-"])
        #expect(requests.first?.header("If-Range") == nil)
        #expect(server.bodyBytesSent(FaultHarness.path) == body.count - 1_500_000 + 65536)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["continued.bin"])
    }

    @Test("continuing a file that is not a prefix downloads anew beside it and replaces it once complete")
    func continueWrongPrefix() async throws {
        // GIVEN 1,500,000 bytes of something else at the destination
        let server = try FaultServer()
        server.setResource(FaultHarness.path, body: TestData.bytes(count: 2 << 20, seed: 56))
        let directory = try TemporaryDirectory()
        let destination = directory.file("foreign.bin")
        let foreign = TestData.bytes(count: 1_500_000, seed: 57)
        try FaultHarness.write(foreign, to: destination)

        // WHEN it is downloaded with .continueIt
        let watched = try await FaultHarness.run(
            FaultHarness.request(server, to: .file(destination), existingFile: .continueIt))

        // THEN the overlap did not match, the download restarted from byte 0 (a second request),
        // and the finished file replaced the foreign one; no partial or record remains
        #expect(watched.error == nil)
        #expect(watched.restartCodes == [.overlapMismatch])
        FaultHarness.expectFile(destination, equals: TestData.bytes(count: 2 << 20, seed: 56))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["foreign.bin"])
        #expect(FaultHarness.requests(server).count == 2)
    }

    @Test(
        "a range target writes exactly the bytes asked for",
        arguments: [
            ByteRangeSpec.closed(first: 100, last: 199),
            .from(first: 700_000),
            .suffix(length: 5000),
            .closed(first: 1_000_000, last: 5_000_000),
        ])
    func rangeTarget(spec: ByteRangeSpec) async throws {
        // GIVEN a 1 MiB + 17 resource
        let server = try FaultServer()
        let body = TestData.bytes(count: (1 << 20) + 17, seed: 58)
        server.setResource(FaultHarness.path, body: body)
        let directory = try TemporaryDirectory()
        let destination = directory.file("range.bin")
        let expected: [UInt8]
        switch spec {
        case .closed(let first, let last): expected = Array(body[Int(first)...min(Int(last), body.count - 1)])
        case .from(let first): expected = Array(body[Int(first)...])
        case .suffix(let length): expected = Array(body.suffix(Int(length)))
        }

        // WHEN the range is downloaded
        let watched = try await FaultHarness.run(
            FaultHarness.request(server, to: .file(destination), target: .range(spec)))

        // THEN the file holds exactly those bytes, asked for with that Range
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        FaultHarness.expectFile(destination, equals: expected)
        #expect(watched.completion?.bytes == Int64(expected.count))
        #expect(FaultHarness.requests(server).map { $0.header("Range") } == [spec.headerValue])
        #expect(watched.responses.map(\.status) == [206])
    }

    @Test("a dropped range download resumes inside the range")
    func rangeTargetResumes() async throws {
        // GIVEN a closed range whose first answer is cut after 100,000 bytes
        let server = try FaultServer()
        let body = TestData.bytes(count: 1 << 20, seed: 59)
        server.setResource(FaultHarness.path, body: body)
        server.enqueueFaults(FaultHarness.path, [.dropAfter(bytes: 100_000)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("range-resumed.bin")

        // WHEN bytes 1000-600000 are downloaded with retries
        let watched = try await FaultHarness.run(
            FaultHarness.request(
                server, to: .file(destination), target: .range(.closed(first: 1000, last: 600_000))))

        // THEN the retry asks for the rest of the range, guarded, and the file is exactly the range
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        FaultHarness.expectFile(destination, equals: Array(body[1000...600_000]))
        let requests = FaultHarness.requests(server)
        #expect(requests.map { $0.header("Range") } == ["bytes=1000-600000", "bytes=101000-600000"])
        #expect(requests.last?.header("If-Range") == "\"v1\"")
    }

    @Test("a range download whose file changed on the server restarts the range with the new bytes")
    func rangeTargetResourceChanged() async throws {
        // GIVEN a closed range cut after 100,000 bytes, and the file replaced by "v2" before the retry
        let server = try FaultServer()
        let old = TestData.bytes(count: 1 << 20, seed: 61)
        let new = TestData.bytes(count: 1 << 20, seed: 62)
        server.setResource(FaultHarness.path, body: old)
        server.enqueueFaults(
            FaultHarness.path,
            [
                .dropAfter(bytes: 100_000),
                .replaceResource(body: new, etag: "\"v2\"", lastModified: nil),
            ])
        let directory = try TemporaryDirectory()
        let destination = directory.file("range-changed.bin")

        // WHEN bytes 1000-600000 are downloaded with retries
        let watched = try await FaultHarness.run(
            FaultHarness.request(
                server, to: .file(destination), target: .range(.closed(first: 1000, last: 600_000))))

        // THEN the If-Range mismatch (a 200) gives up the old bytes and the range is asked again, whole
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        #expect(watched.restartCodes == [.resourceChanged])
        FaultHarness.expectFile(destination, equals: Array(new[1000...600_000]))
        let requests = FaultHarness.requests(server)
        #expect(requests.map { $0.header("Range") } == ["bytes=1000-600000", "bytes=101000-600000", "bytes=1000-600000"])
        #expect(requests.map { $0.header("If-Range") } == [nil, "\"v1\"", nil])
    }

    @Test("a server that ignores Range for a range target makes the download fail, writing nothing")
    func rangeTargetIgnored() async throws {
        // GIVEN a server that always answers 200 with the whole file
        let server = try FaultServer()
        server.setResource(FaultHarness.path, body: TestData.bytes(count: 200_000, seed: 60))
        server.setPersistentFaults(FaultHarness.path, [.ignoreRange])
        let directory = try TemporaryDirectory()
        let destination = directory.file("norange.bin")

        // WHEN a closed range is downloaded
        let watched = try await FaultHarness.run(
            FaultHarness.request(
                server, to: .file(destination), target: .range(.closed(first: 100, last: 199))))

        // THEN it cannot be done and nothing is written
        #expect(watched.error?.category == .cannotResume)
        #expect(FaultHarness.requests(server).count == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }
}
