import Foundation
import Haul
import HaulCore
import HaulStore
import HaulTestSupport
import Testing

// Resuming: within a run (retries), across runs (the record), and every reason to give bytes up.
extension DownloadFaultTests {
    @Test("a dropped connection is resumed with Range and If-Range, without re-downloading")
    func dropIsResumedByRetry() async throws {
        // GIVEN a 4 MiB resource whose first answer is cut after 1,000,000 bytes
        let server = try FaultServer()
        let body = TestData.bytes(count: 4 << 20, seed: 21)
        server.setResource(FaultHarness.path, body: body)
        server.enqueueFaults(FaultHarness.path, [.dropAfter(bytes: 1_000_000)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("dropped.bin")

        // WHEN it is downloaded with retries
        let watched = try await FaultHarness.run(FaultHarness.request(server, to: .file(destination)))

        // THEN the file is bit-exact
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        FaultHarness.expectFile(destination, equals: body)
        // AND the retry asked for the rest of the same version only
        let requests = FaultHarness.requests(server)
        try #require(requests.count == 2)
        #expect(requests[0].header("Range") == nil)
        #expect(requests[1].header("Range") == "bytes=1000000-")
        #expect(requests[1].header("If-Range") == "\"v1\"")
        #expect(requests.allSatisfy { $0.header("Accept-Encoding") == "identity" })
        // AND no byte was fetched twice
        #expect(server.bodyBytesSent(FaultHarness.path) == body.count)
        #expect(watched.completion?.bytesTransferred == Int64(body.count))
        // AND the events show one retry, no restart, and a 206 resumed at the cut
        #expect(watched.retries.count == 1)
        #expect(watched.restartCodes.isEmpty)
        #expect(watched.responses.map(\.status) == [200, 206])
        #expect(watched.responses.last?.resumedFrom == 1_000_000)
        #expect(watched.responses.last?.totalBytes == Int64(body.count))
    }

    @Test("a connection that keeps dropping still completes while every attempt brings bytes")
    func repeatedDropsComplete() async throws {
        // GIVEN a server that cuts every answer after 200,000 bytes
        let server = try FaultServer()
        let body = TestData.bytes(count: 1 << 20, seed: 38)
        server.setResource(FaultHarness.path, body: body)
        server.setPersistentFaults(FaultHarness.path, [.dropAfter(bytes: 200_000)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("flaky.bin")

        // WHEN it is downloaded with a budget of one retry
        let watched = try await FaultHarness.run(
            FaultHarness.request(
                server, to: .file(destination), retry: RetryPolicy(maxRetries: 1, baseDelay: 0.02, maxDelay: 0.05)))

        // THEN progress renews the budget: each attempt resumes where the last one was cut
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        FaultHarness.expectFile(destination, equals: body)
        let expectedRanges: [String?] = [nil] + stride(from: 200_000, to: body.count, by: 200_000).map { "bytes=\($0)-" }
        #expect(FaultHarness.requests(server).map { $0.header("Range") } == expectedRanges)
        #expect(server.bodyBytesSent(FaultHarness.path) == body.count)
    }

    @Test("a weak ETag cannot guard a resume: the overlap is checked instead")
    func weakETagUsesOverlap() async throws {
        // GIVEN a resource with only a weak ETag, cut after 500,000 bytes
        let server = try FaultServer()
        let body = TestData.bytes(count: 1 << 20, seed: 39)
        server.setResource(FaultHarness.path, body: body, etag: "W/\"weak1\"")
        server.enqueueFaults(FaultHarness.path, [.dropAfter(bytes: 500_000)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("weak.bin")

        // WHEN it is downloaded with retries
        let watched = try await FaultHarness.run(FaultHarness.request(server, to: .file(destination)))

        // THEN the resume sends no If-Range, re-fetches 64 KiB to compare, and completes bit-exact
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        #expect(watched.restartCodes.isEmpty)
        FaultHarness.expectFile(destination, equals: body)
        let requests = FaultHarness.requests(server)
        try #require(requests.count == 2)
        #expect(requests[1].header("Range") == "bytes=\(500_000 - 65536)-")
        #expect(requests[1].header("If-Range") == nil)
    }

    @Test("a download into a directory resumes across runs and keeps the server's file name")
    func directoryDownloadResumesAcrossRuns() async throws {
        // GIVEN a named resource whose first answer is cut after 300,000 bytes
        let server = try FaultServer()
        let body = TestData.bytes(count: 1 << 20, seed: 40)
        server.setResource(
            "/dl/file.bin", body: body,
            extraHeaders: [("Content-Disposition", "attachment; filename=\"report.pdf\"")])
        server.enqueueFaults("/dl/file.bin", [.dropAfter(bytes: 300_000)])
        let directory = try TemporaryDirectory()
        let request = try FaultHarness.request(
            server, "/dl/file.bin", to: .directory(directory.path), retry: FaultHarness.noRetry)
        let first = try await FaultHarness.run(request)
        #expect(first.error?.category == .network)
        #expect(!FaultHarness.exists(directory.file("report.pdf")))

        // WHEN a second run for the same URL is started
        let second = try await FaultHarness.run(request)

        // THEN it resumes the hidden partial and lands under the name from the first response
        let completion = try #require(second.completion, "failed: \(String(describing: second.error))")
        #expect(completion.path == directory.file("report.pdf"))
        FaultHarness.expectFile(directory.file("report.pdf"), equals: body)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["report.pdf"])
        #expect(FaultHarness.requests(server, "/dl/file.bin").map { $0.header("Range") } == [nil, "bytes=300000-"])
    }

    @Test("a run that fails keeps its partial and record; the next run resumes and completes")
    func resumeAcrossRuns() async throws {
        // GIVEN a first run without retries, cut after 1,500,000 bytes
        let server = try FaultServer()
        let body = TestData.bytes(count: 3 << 20, seed: 22)
        server.setResource(FaultHarness.path, body: body)
        server.enqueueFaults(FaultHarness.path, [.dropAfter(bytes: 1_500_000)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("across.bin")
        let request = try FaultHarness.request(server, to: .file(destination), retry: FaultHarness.noRetry)

        // WHEN the first run ends
        let first = try await FaultHarness.run(request)

        // THEN it failed as a network error, keeping the bytes and a record of their version
        #expect(first.error?.category == .network)
        #expect(!FaultHarness.exists(destination))
        #expect(FaultHarness.contents(FaultHarness.partialPath(destination)) == Array(body[0..<1_500_000]))
        let record = try #require(try RecordFile(path: FaultHarness.recordPath(destination)).load())
        #expect(record.validators.etag == EntityTag(headerValue: "\"v1\""))
        #expect(record.totalLength == Int64(body.count))

        // WHEN a second run is started for the same download
        let second = try await FaultHarness.run(request)

        // THEN it resumes at the cut and completes bit-exact
        #expect(second.completion != nil, "failed: \(String(describing: second.error))")
        FaultHarness.expectFile(destination, equals: body)
        #expect(second.starts.first?.resumingFrom == 1_500_000)
        let requests = FaultHarness.requests(server)
        try #require(requests.count == 2)
        #expect(requests[1].header("Range") == "bytes=1500000-")
        #expect(requests[1].header("If-Range") == "\"v1\"")
        #expect(server.bodyBytesSent(FaultHarness.path) == body.count)
        #expect(!FaultHarness.exists(FaultHarness.partialPath(destination)))
        #expect(!FaultHarness.exists(FaultHarness.recordPath(destination)))
    }

    @Test("a server that ignores Range on resume makes the download restart from byte 0")
    func serverIgnoresRangeOnResume() async throws {
        // GIVEN a drop after 700,000 bytes, then a 200 with the whole body to the resume
        let server = try FaultServer()
        let body = TestData.bytes(count: 2 << 20, seed: 23)
        server.setResource(FaultHarness.path, body: body)
        server.enqueueFaults(FaultHarness.path, [.dropAfter(bytes: 700_000), .ignoreRange])
        let directory = try TemporaryDirectory()
        let destination = directory.file("ignored.bin")

        // WHEN it is downloaded
        let watched = try await FaultHarness.run(FaultHarness.request(server, to: .file(destination)))

        // THEN the download restarted for that reason and the file is bit-exact (not spliced)
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        #expect(watched.restartCodes == [.serverIgnoredRange])
        FaultHarness.expectFile(destination, equals: body)
        let requests = FaultHarness.requests(server)
        try #require(requests.count == 2)
        #expect(requests[1].header("Range") == "bytes=700000-")
        #expect(server.bodyBytesSent(FaultHarness.path) == 700_000 + body.count)
    }

    @Test(
        "a file that changed between runs is fetched anew, never mixed",
        arguments: [2 << 20, 3 << 20 + 5])
    func resourceChangedBetweenRuns(newSize: Int) async throws {
        // GIVEN a first run cut after 1,000,000 bytes of version "v1"
        let server = try FaultServer()
        let old = TestData.bytes(count: 2 << 20, seed: 24)
        let new = TestData.bytes(count: newSize, seed: 25)
        server.setResource(FaultHarness.path, body: old)
        server.enqueueFaults(FaultHarness.path, [.dropAfter(bytes: 1_000_000)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("changed.bin")
        let request = try FaultHarness.request(server, to: .file(destination), retry: FaultHarness.noRetry)
        let first = try await FaultHarness.run(request)
        #expect(first.error?.category == .network)

        // WHEN the server's file becomes "v2" and a second run resumes
        server.enqueueFaults(FaultHarness.path, [.replaceResource(body: new, etag: "\"v2\"", lastModified: nil)])
        let second = try await FaultHarness.run(request)

        // THEN the If-Range guard fails, the download restarts, and the file is exactly the new version
        #expect(second.completion != nil, "failed: \(String(describing: second.error))")
        #expect(second.restartCodes == [.resourceChanged])
        FaultHarness.expectFile(destination, equals: new)
        let requests = FaultHarness.requests(server)
        try #require(requests.count == 2)
        #expect(requests[1].header("Range") == "bytes=1000000-")
        #expect(requests[1].header("If-Range") == "\"v1\"")
        #expect(!FaultHarness.exists(FaultHarness.recordPath(destination)))
    }

    @Test("a file that changes between retries of one run is fetched anew, never mixed")
    func resourceChangedBetweenRetries() async throws {
        // GIVEN a drop after 500,000 bytes, and the file replaced before the retry is answered
        let server = try FaultServer()
        let old = TestData.bytes(count: 2 << 20, seed: 26)
        let new = TestData.bytes(count: 2 << 20, seed: 27)
        server.setResource(FaultHarness.path, body: old)
        server.enqueueFaults(
            FaultHarness.path,
            [
                .dropAfter(bytes: 500_000),
                .replaceResource(body: new, etag: "\"v2\"", lastModified: nil),
            ])
        let directory = try TemporaryDirectory()
        let destination = directory.file("changed-retry.bin")

        // WHEN it is downloaded with retries
        let watched = try await FaultHarness.run(FaultHarness.request(server, to: .file(destination)))

        // THEN the new version is written whole
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        #expect(watched.restartCodes == [.resourceChanged])
        FaultHarness.expectFile(destination, equals: new)
        #expect(FaultHarness.requests(server).count == 2)
    }

    @Test("a 416 with Content-Range equal to the partial's length completes without refetching")
    func unsatisfiableRangeProvesCompletion() async throws {
        // GIVEN a partial holding every byte of "v1", with its record, but not yet renamed
        let server = try FaultServer()
        let body = TestData.bytes(count: 1 << 20, seed: 28)
        server.setResource(FaultHarness.path, body: body)
        let directory = try TemporaryDirectory()
        let destination = directory.file("complete.bin")
        let request = try FaultHarness.request(server, to: .file(destination))
        try FaultHarness.write(body, to: FaultHarness.partialPath(destination))
        try RecordFile(path: FaultHarness.recordPath(destination)).save(
            FaultHarness.record(for: request, totalLength: Int64(body.count), syncedLength: Int64(body.count)))

        // WHEN the download is run
        let watched = try await FaultHarness.run(request)

        // THEN it asks past the end, is told the length matches, and finishes with no body fetched
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        FaultHarness.expectFile(destination, equals: body)
        #expect(watched.restartCodes.isEmpty)
        let requests = FaultHarness.requests(server)
        #expect(requests.map { $0.header("Range") } == ["bytes=\(body.count)-"])
        #expect(server.bodyBytesSent(FaultHarness.path) == 0)
        #expect(!FaultHarness.exists(FaultHarness.partialPath(destination)))
        #expect(!FaultHarness.exists(FaultHarness.recordPath(destination)))
    }

    @Test("a 416 without Content-Range makes the download restart from byte 0")
    func unsatisfiableRangeWithoutLengthRestarts() async throws {
        // GIVEN a complete-looking partial and a server answering its resume with a bare 416
        let server = try FaultServer()
        let body = TestData.bytes(count: 1 << 20, seed: 29)
        server.setResource(FaultHarness.path, body: body)
        server.enqueueFaults(FaultHarness.path, [.status416(withContentRange: false)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("bare416.bin")
        let request = try FaultHarness.request(server, to: .file(destination))
        try FaultHarness.write(body, to: FaultHarness.partialPath(destination))
        try RecordFile(path: FaultHarness.recordPath(destination)).save(
            FaultHarness.record(for: request, totalLength: Int64(body.count), syncedLength: Int64(body.count)))

        // WHEN the download is run
        let watched = try await FaultHarness.run(request)

        // THEN it restarts for that reason and fetches the whole file again
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        #expect(watched.restartCodes == [.rangeNotSatisfiable])
        FaultHarness.expectFile(destination, equals: body)
        let requests = FaultHarness.requests(server)
        #expect(requests.map { $0.header("Range") } == ["bytes=\(body.count)-", nil])
        #expect(server.bodyBytesSent(FaultHarness.path) == body.count)
    }

    @Test("without validators a resume re-fetches the last 64 KiB and checks them, with no If-Range")
    func resumeWithoutValidatorsChecksOverlap() async throws {
        // GIVEN a resource with neither ETag nor Last-Modified, and a first run cut after 1,000,000 bytes
        let server = try FaultServer()
        let body = TestData.bytes(count: 2 << 20, seed: 30)
        server.setResource(FaultHarness.path, body: body, etag: nil, lastModified: nil)
        server.enqueueFaults(FaultHarness.path, [.dropAfter(bytes: 1_000_000)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("novalidators.bin")
        let request = try FaultHarness.request(server, to: .file(destination), retry: FaultHarness.noRetry)
        let first = try await FaultHarness.run(request)
        #expect(first.error?.category == .network)

        // WHEN a second run resumes
        let second = try await FaultHarness.run(request)

        // THEN it asks from 64 KiB before the end of the partial, unguarded, and completes bit-exact
        #expect(second.completion != nil, "failed: \(String(describing: second.error))")
        #expect(second.restartCodes.isEmpty)
        FaultHarness.expectFile(destination, equals: body)
        let requests = FaultHarness.requests(server)
        try #require(requests.count == 2)
        #expect(requests[1].header("Range") == "bytes=\(1_000_000 - 65536)-")
        #expect(requests[1].header("If-Range") == nil)
        #expect(server.bodyBytesSent(FaultHarness.path) == body.count + 65536)
    }

    @Test("without validators, different bytes in the overlap make the download restart with the new file")
    func overlapMismatchRestarts() async throws {
        // GIVEN a first run of an unvalidated resource cut after 1,000,000 bytes
        let server = try FaultServer()
        let old = TestData.bytes(count: 2 << 20, seed: 31)
        let new = TestData.bytes(count: 2 << 20, seed: 32)
        server.setResource(FaultHarness.path, body: old, etag: nil, lastModified: nil)
        server.enqueueFaults(FaultHarness.path, [.dropAfter(bytes: 1_000_000)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("mismatch.bin")
        let request = try FaultHarness.request(server, to: .file(destination), retry: FaultHarness.noRetry)
        let first = try await FaultHarness.run(request)
        #expect(first.error?.category == .network)

        // WHEN the server's content changes (same size, still no validators) and a second run resumes
        server.setResource(FaultHarness.path, body: new, etag: nil, lastModified: nil)
        let second = try await FaultHarness.run(request)

        // THEN the overlap check catches it, the download restarts, and the file is the new content
        #expect(second.completion != nil, "failed: \(String(describing: second.error))")
        #expect(second.restartCodes == [.overlapMismatch])
        FaultHarness.expectFile(destination, equals: new)
        let requests = FaultHarness.requests(server)
        #expect(requests.dropFirst().map { $0.header("Range") } == ["bytes=\(1_000_000 - 65536)-", nil])
        #expect(requests.allSatisfy { $0.header("If-Range") == nil })
    }

    @Test("with only Last-Modified, If-Range carries the date")
    func lastModifiedOnlyGuardsResume() async throws {
        // GIVEN a resource with a Last-Modified date and no ETag, cut after 800,000 bytes
        let date = "Wed, 21 Oct 2015 07:28:00 GMT"
        let server = try FaultServer()
        let body = TestData.bytes(count: 2 << 20, seed: 33)
        server.setResource(FaultHarness.path, body: body, etag: nil, lastModified: date)
        server.enqueueFaults(FaultHarness.path, [.dropAfter(bytes: 800_000)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("dated.bin")

        // WHEN it is downloaded with retries
        let watched = try await FaultHarness.run(FaultHarness.request(server, to: .file(destination)))

        // THEN the resume is guarded by the date and needs no overlap
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        FaultHarness.expectFile(destination, equals: body)
        let requests = FaultHarness.requests(server)
        try #require(requests.count == 2)
        #expect(requests[1].header("Range") == "bytes=800000-")
        #expect(requests[1].header("If-Range") == date)
        #expect(server.bodyBytesSent(FaultHarness.path) == body.count)
    }

    @Test("a gzip-encoded answer to a resume is never spliced onto identity bytes")
    func gzipResumeIsNotSpliced() async throws {
        // GIVEN a drop after 600,000 bytes, then a 206 with Content-Encoding: gzip to the resume
        let server = try FaultServer()
        let body = TestData.bytes(count: 2 << 20, seed: 34)
        server.setResource(FaultHarness.path, body: body)
        server.enqueueFaults(FaultHarness.path, [.dropAfter(bytes: 600_000), .gzip])
        let directory = try TemporaryDirectory()
        let destination = directory.file("gzip.bin")

        // WHEN it is downloaded
        let watched = try await FaultHarness.run(FaultHarness.request(server, to: .file(destination)))

        // THEN the encoded range is refused, the download restarts, and the file is the identity bytes
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        #expect(watched.restartCodes == [.compressedPartial])
        FaultHarness.expectFile(destination, equals: body)
        let requests = FaultHarness.requests(server)
        #expect(requests.map { $0.header("Range") } == [nil, "bytes=600000-", nil])
        #expect(requests.allSatisfy { $0.header("Accept-Encoding") == "identity" })
    }

    @Test("a partial of gzip-encoded bytes is discarded rather than resumed")
    func gzipPartialIsNotResumed() async throws {
        // GIVEN a server that always labels the body gzip, and a first answer cut after 400,000 bytes
        let server = try FaultServer()
        let body = TestData.bytes(count: 1 << 20, seed: 35)
        server.setResource(FaultHarness.path, body: body)
        server.setPersistentFaults(FaultHarness.path, [.gzip])
        server.enqueueFaults(FaultHarness.path, [.combined([.gzip, .dropAfter(bytes: 400_000)])])
        let directory = try TemporaryDirectory()
        let destination = directory.file("gzip-partial.bin")

        // WHEN it is downloaded with retries
        let watched = try await FaultHarness.run(FaultHarness.request(server, to: .file(destination)))

        // THEN no range is asked for the encoded bytes: the retry starts over
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        #expect(watched.restartCodes == [.compressedPartial])
        FaultHarness.expectFile(destination, equals: body)
        #expect(FaultHarness.requests(server).map { $0.header("Range") } == [nil, nil])
    }

    @Test("a stalled transfer is abandoned after the stall timeout and resumed")
    func stallIsResumed() async throws {
        // GIVEN a first answer that stops sending after 300,000 bytes for 3 s
        let server = try FaultServer()
        let body = TestData.bytes(count: 2 << 20, seed: 36)
        server.setResource(FaultHarness.path, body: body)
        server.enqueueFaults(FaultHarness.path, [.stall(afterBytes: 300_000, seconds: 3)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("stalled.bin")
        let clock = ContinuousClock()
        let startedAt = clock.now

        // WHEN it is downloaded with a 1 s stall timeout
        let watched = try await FaultHarness.run(
            FaultHarness.request(server, to: .file(destination), stallTimeout: 1))

        // THEN the stall was detected before the server gave up, and the retry resumed at the stall
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        #expect(clock.now - startedAt < .seconds(3))
        FaultHarness.expectFile(destination, equals: body)
        #expect(watched.retries.count == 1)
        let requests = FaultHarness.requests(server)
        try #require(requests.count == 2)
        #expect(requests[1].header("Range") == "bytes=300000-")
        #expect(requests[1].header("If-Range") == "\"v1\"")
    }

    @Test("a torn tail from another boot is cut back to the synced length, then resumed")
    func tornTailIsTruncated() async throws {
        // GIVEN a record from another boot vouching for 1,000,000 synced bytes, and a partial
        // holding those plus 50,000 bytes of garbage the crash left
        let server = try FaultServer()
        let body = TestData.bytes(count: 2 << 20, seed: 37)
        server.setResource(FaultHarness.path, body: body)
        let directory = try TemporaryDirectory()
        let destination = directory.file("torn.bin")
        let request = try FaultHarness.request(server, to: .file(destination))
        let synced = 1_000_000
        try FaultHarness.write(
            Array(body[0..<synced]) + TestData.bytes(count: 50_000, seed: 99),
            to: FaultHarness.partialPath(destination))
        try RecordFile(path: FaultHarness.recordPath(destination)).save(
            FaultHarness.record(
                for: request, totalLength: Int64(body.count), syncedLength: Int64(synced), bootID: "other-boot"))

        // WHEN the download is run
        let watched = try await FaultHarness.run(request)

        // THEN only the synced bytes are trusted, the rest is fetched, and the file is bit-exact
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        #expect(watched.starts.first?.resumingFrom == Int64(synced))
        FaultHarness.expectFile(destination, equals: body)
        let requests = FaultHarness.requests(server)
        #expect(requests.map { $0.header("Range") } == ["bytes=\(synced)-"])
        #expect(requests.first?.header("If-Range") == "\"v1\"")
    }
}
