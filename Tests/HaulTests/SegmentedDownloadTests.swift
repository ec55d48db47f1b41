import Foundation
import Haul
import HaulCore
import HaulEngine
import HaulTestSupport
import Synchronization
import Testing

/// Segmented downloads against the fault server: every connection is throttled, so splitting the
/// file really runs several connections at once, and each scenario breaks one of them.
@Suite("Segmented downloads", .serialized)
struct SegmentedDownloadTests {
    static let path = "/segmented.bin"
    /// Per connection: 16 MiB take about 4 s over one connection, about 1 s over four.
    static let rate = 4 << 20
    static let throttle = Fault.throttle(bytesPerSecond: rate)
    static let fastRetry = RetryPolicy(maxRetries: 4, baseDelay: 0.05, maxDelay: 0.2)

    static func request(
        _ server: FaultServer,
        to destination: String,
        connections: Int? = 4,
        stallTimeout: Double = 5
    ) throws -> DownloadRequest {
        let url = try #require(URL(string: server.url(path)))
        var request = DownloadRequest(
            url: url,
            destination: .file(destination),
            retry: fastRetry,
            transfer: TransferOptions(connectTimeout: 5, stallTimeout: stallTimeout),
            progressInterval: 0.05)
        request.connections = connections
        return request
    }

    /// A throttled resource: the first request answers normally (throttled), the queued faults
    /// take the next requests, and every later request is throttled.
    static func serve(_ body: [UInt8], then queued: [Fault] = [], persistent: [Fault] = [throttle]) throws -> FaultServer {
        let server = try FaultServer()
        server.setResource(path, body: body)
        server.enqueueFaults(path, [throttle] + queued)
        server.setPersistentFaults(path, persistent)
        return server
    }

    /// Requests that asked for a closed range `bytes=a-b` (the segment requests).
    static func segmentRequests(_ server: FaultServer) -> [RecordedRequest] {
        FaultHarness.requests(server, path).filter(isClosedRange)
    }

    /// Checks the one-connection fallback from the requests the server recorded: the download
    /// restarted from byte 0 once (two requests without Range: the first and the restart), after
    /// a segment had been asked for, and from the restart on no segment was asked for again; at most
    /// open ranges `bytes=N-` followed, each further on (one connection resuming itself).
    static func expectOneConnectionAfterFallback(_ server: FaultServer, sourceLocation: SourceLocation = #_sourceLocation) {
        let requests = FaultHarness.requests(server, path)
        let whole = requests.indices.filter { requests[$0].header("Range") == nil }
        #expect(whole.count == 2, "requests: \(describe(server))", sourceLocation: sourceLocation)
        guard let restart = whole.last, let firstSegment = requests.firstIndex(where: { isClosedRange($0) }) else {
            Issue.record("no restart after a segment request; requests: \(describe(server))", sourceLocation: sourceLocation)
            return
        }
        #expect(firstSegment < restart, "requests: \(describe(server))", sourceLocation: sourceLocation)
        let after = requests[(restart + 1)...]
        #expect(!after.contains(where: isClosedRange), "a segment after the fallback; requests: \(describe(server))", sourceLocation: sourceLocation)
        let starts = after.compactMap { $0.header("Range").flatMap(rangeStart) }
        #expect(starts.count == after.count, "requests: \(describe(server))", sourceLocation: sourceLocation)
        #expect(starts == starts.sorted() && Set(starts).count == starts.count, "requests: \(describe(server))", sourceLocation: sourceLocation)
    }

    /// A request for a closed range `bytes=a-b`: a segment.
    static func isClosedRange(_ request: RecordedRequest) -> Bool {
        guard let range = request.header("Range"), range.hasPrefix("bytes=") else { return false }
        return !range.hasSuffix("-")
    }

    static func describe(_ server: FaultServer) -> String {
        FaultHarness.requests(server, path).map { $0.header("Range") ?? "(whole)" }.joined(separator: ", ")
    }

    // MARK: - scenarios

    @Test("four connections fetch closed ranges guarded by If-Range, and progress shows the segments")
    func plainFourConnections() async throws {
        // GIVEN a 16 MiB resource served at 4 MiB/s per connection
        let body = TestData.bytes(count: 16 << 20, seed: 201)
        let server = try Self.serve(body)
        let directory = try TemporaryDirectory()
        let destination = directory.file("plain.bin")

        // WHEN it is downloaded over four connections
        let started = Date()
        let watched = try await FaultHarness.run(Self.request(server, to: destination), timeout: 30)
        let seconds = Date().timeIntervalSince(started)

        // THEN the file is exact
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        FaultHarness.expectFile(destination, equals: body)
        // AND at least three requests asked for `bytes=a-b` with If-Range set to the ETag
        let segments = Self.segmentRequests(server)
        #expect(segments.count >= 3, "requests: \(Self.describe(server))")
        for request in segments {
            #expect(request.header("If-Range") == "\"v1\"", "range \(request.header("Range") ?? "-")")
        }
        // AND the connections ran at once (one connection alone needs 4 s)
        #expect(seconds < 3.5, "took \(seconds) s")
        // AND progress events carried the per-segment detail
        let detailed = watched.progress.compactMap(\.segments)
        #expect(!detailed.isEmpty, "no progress event had segments")
        #expect(detailed.contains { $0.count >= 3 }, "segments seen: \(detailed.map(\.count))")
        #expect(detailed.allSatisfy { $0.allSatisfy { $0.begin <= $0.next && $0.next <= $0.end && $0.end <= Int64(body.count) } })
    }

    @Test("an extra connection dropped mid-segment retries its segment from where it stopped")
    func droppedExtraConnection() async throws {
        // GIVEN the second request (an extra connection) is cut after 1 MiB
        let body = TestData.bytes(count: 16 << 20, seed: 202)
        let server = try Self.serve(body, then: [.combined([Self.throttle, .dropAfter(bytes: 1 << 20)])])
        let directory = try TemporaryDirectory()
        let destination = directory.file("dropped.bin")

        // WHEN it is downloaded over four connections
        let watched = try await FaultHarness.run(Self.request(server, to: destination), timeout: 30)

        // THEN the file is exact
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        FaultHarness.expectFile(destination, equals: body)
        #expect(watched.restartCodes.isEmpty)
        // AND the dropped segment was asked for again, not the whole file
        let requests = FaultHarness.requests(server, Self.path)
        try #require(requests.count >= 5, "requests: \(Self.describe(server))")
        // (Which connection's request arrived second is up to the threads, so look for any segment
        // asked for again exactly 1 MiB past where an earlier request for it began.)
        let starts = requests.dropFirst().compactMap { $0.header("Range") }.compactMap(Self.rangeStart)
        let resumedOneMiBLater = starts.enumerated().contains { index, start in
            starts.dropFirst(index + 1).contains(start + (1 << 20))
        }
        #expect(resumedOneMiBLater, "requests: \(Self.describe(server))")
        // AND little more than the file crossed the wire
        #expect(server.bodyBytesSent(Self.path) <= body.count + (6 << 20), "sent \(server.bodyBytesSent(Self.path))")
    }

    @Test("a stalled extra connection is abandoned after the stall timeout and its segment retried")
    func stalledExtraConnection() async throws {
        // GIVEN the second request stalls for 20 s after 512 KiB
        let body = TestData.bytes(count: 16 << 20, seed: 203)
        let server = try Self.serve(body, then: [.combined([Self.throttle, .stall(afterBytes: 512 << 10, seconds: 20)])])
        let directory = try TemporaryDirectory()
        let destination = directory.file("stalled.bin")

        // WHEN it is downloaded over four connections with a 1 s stall timeout
        let started = Date()
        let watched = try await FaultHarness.run(Self.request(server, to: destination, stallTimeout: 1), timeout: 30)
        let seconds = Date().timeIntervalSince(started)

        // THEN the file is exact, long before the stall would have ended
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        FaultHarness.expectFile(destination, equals: body)
        #expect(seconds < 12, "took \(seconds) s")
        #expect(watched.restartCodes.isEmpty)
    }

    @Test("the file changing between two segment requests restarts, and the result is entirely the new version")
    func resourceReplacedBetweenSegments() async throws {
        // GIVEN the file is replaced by another version (other bytes, other length, other ETag)
        // just before the third request is answered
        let old = TestData.bytes(count: 16 << 20, seed: 204)
        let new = TestData.bytes(count: 18 << 20, seed: 205)
        let server = try Self.serve(
            old,
            then: [
                Self.throttle,
                .combined([Self.throttle, .replaceResource(body: new, etag: "\"v2\"", lastModified: nil)]),
            ])
        let directory = try TemporaryDirectory()
        let destination = directory.file("replaced.bin")

        // WHEN it is downloaded over four connections
        let watched = try await FaultHarness.run(Self.request(server, to: destination), timeout: 40)

        // THEN the download restarted and the file is the new version, with no old byte spliced in
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        #expect(!watched.restartCodes.isEmpty, "no restarted event; requests: \(Self.describe(server))")
        FaultHarness.expectFile(destination, equals: new)
        // AND the restart fetched the new version from byte 0
        let requests = FaultHarness.requests(server, Self.path)
        #expect(requests.last?.header("Range") == nil, "requests: \(Self.describe(server))")
    }

    @Test("an extra connection answered with 200 restarts over one connection, without splicing")
    func secondConnectionIgnoresRange() async throws {
        // GIVEN the second request is answered with 200 and the whole body
        let body = TestData.bytes(count: 16 << 20, seed: 206)
        let server = try Self.serve(body, then: [.combined([Self.throttle, .ignoreRange])])
        let directory = try TemporaryDirectory()
        let destination = directory.file("ignored.bin")

        // WHEN it is downloaded over four connections
        let watched = try await FaultHarness.run(Self.request(server, to: destination), timeout: 40)

        // THEN the download restarted from byte 0 and the file is exact
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        #expect(!watched.restartCodes.isEmpty, "no restarted event; requests: \(Self.describe(server))")
        FaultHarness.expectFile(destination, equals: body)
        // AND the restart did not split the file again: one connection from byte 0
        Self.expectOneConnectionAfterFallback(server)
    }

    @Test("a server that honours a range only on the first request still yields the exact file")
    func rangesHonouredOnlyFirst() async throws {
        // GIVEN every request after the first ignores Range (200, whole body)
        let body = TestData.bytes(count: 16 << 20, seed: 207)
        let server = try Self.serve(body, persistent: [Self.throttle, .ignoreRange])
        let directory = try TemporaryDirectory()
        let destination = directory.file("first-only.bin")

        // WHEN it is downloaded over four connections
        let watched = try await FaultHarness.run(Self.request(server, to: destination), timeout: 40)

        // THEN the file is exact
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        FaultHarness.expectFile(destination, equals: body)
        // AND it fell back to one connection from byte 0, which it kept to the end
        #expect(!watched.restartCodes.isEmpty, "no restarted event; requests: \(Self.describe(server))")
        Self.expectOneConnectionAfterFallback(server)
    }

    @Test("429 on extra connections: they end, no more are added, and the download completes")
    func throttledExtraConnections() async throws {
        // GIVEN the second and third requests (extra connections) are answered 429
        let body = TestData.bytes(count: 16 << 20, seed: 208)
        let server = try Self.serve(
            body,
            then: [
                .retryAfter(status: 429, value: "1"),
                .retryAfter(status: 429, value: "1"),
            ])
        let directory = try TemporaryDirectory()
        let destination = directory.file("throttled.bin")

        // WHEN it is downloaded over four connections
        let watched = try await FaultHarness.run(Self.request(server, to: destination), timeout: 40)

        // THEN the file is exact, without a restart
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        FaultHarness.expectFile(destination, equals: body)
        #expect(watched.restartCodes.isEmpty)
        // AND the segments the refused connections had were fetched by the others
        let requests = FaultHarness.requests(server, Self.path)
        #expect(requests.count >= 4, "requests: \(Self.describe(server))")
    }

    @Test("pausing a segmented download and resuming it in the same process keeps the segments")
    func pauseAndResume() async throws {
        // GIVEN a 16 MiB resource over four connections
        let body = TestData.bytes(count: 16 << 20, seed: 209)
        let server = try Self.serve(body)
        let directory = try TemporaryDirectory()
        let destination = directory.file("paused.bin")
        let download = Downloader().download(try Self.request(server, to: destination))

        // WHEN it is paused once a quarter is on disk over several segments, and resumed once paused
        let step = Mutex(0)
        let watched = try await FaultHarness.watch(download, timeout: 40) { event in
            switch event {
            case .progress(let progress):
                guard progress.bytes > Int64(body.count / 4), (progress.segments?.count ?? 0) >= 3 else { return }
                let go = step.withLock { current -> Bool in
                    guard current == 0 else { return false }
                    current = 1
                    return true
                }
                if go { download.pause() }
            case .paused:
                let go = step.withLock { current -> Bool in
                    guard current == 1 else { return false }
                    current = 2
                    return true
                }
                if go { download.resume() }
            default:
                break
            }
        }

        // THEN it paused, resumed and completed exactly
        #expect(step.withLock { $0 } == 2)
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        FaultHarness.expectFile(destination, equals: body)
        #expect(watched.restartCodes.isEmpty)
        // AND the resumed run did not fetch the file again from byte 0
        let requests = FaultHarness.requests(server, Self.path)
        #expect(requests.dropFirst().allSatisfy { $0.header("Range") != nil }, "requests: \(Self.describe(server))")
        let sent = server.bodyBytesSent(Self.path)
        #expect(sent <= body.count + (8 << 20), "sent \(sent) bytes for \(body.count)")
    }

    @Test("adaptive: starts with one connection and adds more while the throughput rises")
    func adaptiveAddsConnections() async throws {
        // GIVEN a 32 MiB resource at 4 MiB/s per connection (8 s over one connection)
        let body = TestData.bytes(count: 32 << 20, seed: 210)
        let server = try Self.serve(body)
        let directory = try TemporaryDirectory()
        let destination = directory.file("adaptive.bin")

        // WHEN it is downloaded without a connection count
        let started = Date()
        let watched = try await FaultHarness.run(Self.request(server, to: destination, connections: nil), timeout: 40)
        let seconds = Date().timeIntervalSince(started)

        // THEN the file is exact, and connections were added: faster than one connection alone
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        FaultHarness.expectFile(destination, equals: body)
        #expect(Self.segmentRequests(server).count >= 3, "requests: \(Self.describe(server))")
        #expect(seconds < 7, "took \(seconds) s")
        #expect(watched.progress.contains { $0.segments != nil })
    }

    @Test("no byte is asked for twice: connections ask a piece at a time, and a steal takes only what nobody asked for")
    func stealsNeverOverlapARequest() async throws {
        // GIVEN a 32 MiB resource at 4 MiB/s per connection, downloaded adaptively (the
        // connections join one after another and steal from each other)
        let body = TestData.bytes(count: 32 << 20, seed: 211)
        let server = try Self.serve(body)
        let directory = try TemporaryDirectory()
        let destination = directory.file("pieces.bin")
        let watched = try await FaultHarness.run(Self.request(server, to: destination, connections: nil), timeout: 40)
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        FaultHarness.expectFile(destination, equals: body)

        // THEN the segment requests' ranges never overlap: no response is cut short by a steal,
        // so the server sends nothing past what is kept
        let ranges = Self.segmentRequests(server).compactMap { $0.header("Range").flatMap(Self.closedRange) }.sorted { $0.lowerBound < $1.lowerBound }
        #expect(ranges.count >= 3, "requests: \(Self.describe(server))")
        for (earlier, later) in zip(ranges, ranges.dropFirst()) {
            #expect(earlier.upperBound <= later.lowerBound, "\(earlier) overlaps \(later); requests: \(Self.describe(server))")
        }
    }

    /// The bytes `a..<b+1` of `bytes=a-b`.
    static func closedRange(_ header: String) -> Range<Int>? {
        guard let first = rangeStart(header), let dash = header.firstIndex(of: "-"), let last = Int(header[header.index(after: dash)...]) else { return nil }
        return first..<(last + 1)
    }

    /// `a` of `bytes=a-b` or `bytes=a-`.
    static func rangeStart(_ header: String) -> Int? {
        guard header.hasPrefix("bytes="), let dash = header.firstIndex(of: "-") else { return nil }
        return Int(header[header.index(header.startIndex, offsetBy: 6)..<dash])
    }
}
