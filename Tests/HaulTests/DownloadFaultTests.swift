import Foundation
import Haul
import HaulCore
import HaulEngine
import HaulStore
import HaulTestSupport
import Testing

/// End-to-end downloads through libcurl against the fault-injecting loopback server.
///
/// The scenarios are spread over `DownloadFault*Tests.swift` as extensions of this suite, so
/// `--filter DownloadFaultTests` runs all of them. Every test owns its server and directory.
@Suite("Downloads against a faulty server")
struct DownloadFaultTests {}

// MARK: - Plain responses

extension DownloadFaultTests {
    @Test("a plain 200 completes, leaves no partial or record, and reports progress with the total")
    func plainDownload() async throws {
        // GIVEN a 2 MiB resource
        let server = try FaultServer()
        let body = TestData.bytes(count: 2 << 20, seed: 11)
        server.setResource(FaultHarness.path, body: body)
        let directory = try TemporaryDirectory()
        let destination = directory.file("plain.bin")

        // WHEN it is downloaded to a file
        let watched = try await FaultHarness.run(FaultHarness.request(server, to: .file(destination)))

        // THEN the file is bit-exact and nothing else is left beside it
        let completion = try #require(watched.completion, "failed: \(String(describing: watched.error))")
        FaultHarness.expectFile(destination, equals: body)
        #expect(completion.path == destination)
        #expect(completion.bytes == Int64(body.count))
        #expect(!FaultHarness.exists(FaultHarness.partialPath(destination)))
        #expect(!FaultHarness.exists(FaultHarness.recordPath(destination)))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["plain.bin"])
        // AND the events went started, response, progress..., completed, with the total known
        #expect(watched.collapsedKinds == ["started", "response", "progress", "completed"])
        #expect(watched.responses.map(\.status) == [200])
        #expect(watched.responses.first?.totalBytes == Int64(body.count))
        #expect(!watched.progress.isEmpty)
        #expect(watched.progress.allSatisfy { $0.totalBytes == Int64(body.count) })
        #expect(watched.progress.last?.bytes == Int64(body.count))
        // AND one plain request was made, asking for the bytes as stored
        let requests = FaultHarness.requests(server)
        #expect(requests.count == 1)
        #expect(requests.first?.header("Range") == nil)
        #expect(requests.first?.header("If-Range") == nil)
        #expect(requests.first?.header("Accept-Encoding") == "identity")
    }

    @Test("an empty resource completes as an empty file")
    func emptyBody() async throws {
        // GIVEN a resource of 0 bytes
        let server = try FaultServer()
        server.setResource(FaultHarness.path, body: [])
        let directory = try TemporaryDirectory()
        let destination = directory.file("empty.bin")

        // WHEN it is downloaded
        let watched = try await FaultHarness.run(FaultHarness.request(server, to: .file(destination)))

        // THEN an empty file is in place after a single request
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        #expect(watched.completion?.bytes == 0)
        #expect(FaultHarness.contents(destination) == [])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["empty.bin"])
        #expect(FaultHarness.requests(server).count == 1)
    }

    @Test("a chunked body without a length completes bit-exact")
    func chunkedBody() async throws {
        // GIVEN a resource served chunked, without Content-Length
        let server = try FaultServer()
        let body = TestData.bytes(count: (1 << 20) + 123, seed: 12)
        server.setResource(FaultHarness.path, body: body)
        server.setPersistentFaults(FaultHarness.path, [.chunked])
        let directory = try TemporaryDirectory()
        let destination = directory.file("chunked.bin")

        // WHEN it is downloaded
        let watched = try await FaultHarness.run(FaultHarness.request(server, to: .file(destination)))

        // THEN it completes with every byte, though the total was unknown up front
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        FaultHarness.expectFile(destination, equals: body)
        #expect(watched.responses.first?.totalBytes == nil)
        #expect(!FaultHarness.exists(FaultHarness.partialPath(destination)))
        #expect(FaultHarness.requests(server).count == 1)
    }

    @Test("a close-delimited body (no length, no chunking) completes bit-exact")
    func closeDelimitedBody() async throws {
        // GIVEN a resource whose body ends when the server closes the connection
        let server = try FaultServer()
        let body = TestData.bytes(count: (1 << 20) + 77, seed: 13)
        server.setResource(FaultHarness.path, body: body)
        server.setPersistentFaults(FaultHarness.path, [.closeDelimited])
        let directory = try TemporaryDirectory()
        let destination = directory.file("close.bin")

        // WHEN it is downloaded
        let watched = try await FaultHarness.run(FaultHarness.request(server, to: .file(destination)))

        // THEN it completes with every byte
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        FaultHarness.expectFile(destination, equals: body)
        #expect(FaultHarness.requests(server).count == 1)
    }

    @Test("bytes past the announced Content-Length are never written")
    func extraBytesAreNotWritten() async throws {
        // GIVEN a server that sends 4 KiB of garbage after the announced body
        let server = try FaultServer()
        let body = TestData.bytes(count: 1 << 20, seed: 14)
        server.setResource(FaultHarness.path, body: body)
        server.setPersistentFaults(FaultHarness.path, [.extraBytes(count: 4096)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("extra.bin")

        // WHEN it is downloaded
        let watched = try await FaultHarness.run(FaultHarness.request(server, to: .file(destination)))

        // THEN the file holds exactly the resource, never the excess
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        FaultHarness.expectFile(destination, equals: body)
        #expect(watched.completion?.bytes == Int64(body.count))
    }

    @Test("a Content-Length larger than the body ends in a verified, bit-exact file")
    func contentLengthTooLarge() async throws {
        // GIVEN a server that announces 1000 bytes more than it sends, once, then behaves
        let server = try FaultServer()
        let body = TestData.bytes(count: 1 << 20, seed: 15)
        server.setResource(FaultHarness.path, body: body)
        server.enqueueFaults(FaultHarness.path, [.wrongContentLength(delta: 1000)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("lying.bin")

        // WHEN it is downloaded with retries
        let watched = try await FaultHarness.run(FaultHarness.request(server, to: .file(destination)))

        // THEN the download does not end at the short body; the final file is the real resource
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        FaultHarness.expectFile(destination, equals: body)
        #expect(FaultHarness.requests(server).count >= 2)
    }
}

// MARK: - Harness

/// A download watched from its first event to its end.
struct WatchedDownload: Sendable {
    let events: [DownloadEvent]

    var completion: DownloadCompletion? {
        if case .completed(let completion) = events.last { return completion }
        return nil
    }

    var error: DownloadError? {
        switch events.last {
        case .failed(let error): return error
        case .cancelled: return DownloadError(.cancelled, "cancelled")
        case nil: return DownloadError(.cancelled, "no event at all")
        default: return nil
        }
    }

    var restartCodes: [RestartReason.Code] {
        events.compactMap { if case .restarted(let reason) = $0 { reason.code } else { nil } }
    }

    var responses: [ResponseInfo] {
        events.compactMap { if case .response(let info) = $0 { info } else { nil } }
    }

    var retries: [RetryInfo] {
        events.compactMap { if case .retrying(let info) = $0 { info } else { nil } }
    }

    var progress: [DownloadProgress] {
        events.compactMap { if case .progress(let progress) = $0 { progress } else { nil } }
    }

    var starts: [DownloadStarted] {
        events.compactMap { if case .started(let started) = $0 { started } else { nil } }
    }

    /// The event kinds in order, with runs of the same kind (many progress events) collapsed.
    var collapsedKinds: [String] {
        var kinds: [String] = []
        for event in events {
            let kind = FaultHarness.kind(of: event)
            if kinds.last != kind { kinds.append(kind) }
        }
        return kinds
    }
}

/// A test took longer than it may.
struct FaultHarnessTimeout: Error, CustomStringConvertible {
    let description: String
}

/// Helpers shared by the `DownloadFaultTests` scenarios.
enum FaultHarness {
    static let path = "/file.bin"
    static let fastRetry = RetryPolicy(maxRetries: 3, baseDelay: 0.05, maxDelay: 0.2)
    static let noRetry = RetryPolicy(maxRetries: 0, baseDelay: 0.05, maxDelay: 0.2)

    static func request(
        _ server: FaultServer,
        _ path: String = FaultHarness.path,
        to destination: Destination,
        target: DownloadTarget = .whole,
        existingFile: ExistingFilePolicy = .refuse,
        retry: RetryPolicy = fastRetry,
        headers: HTTPHeaders = HTTPHeaders(),
        stallTimeout: Double = 5
    ) throws -> DownloadRequest {
        let url = try #require(URL(string: server.url(path)))
        return DownloadRequest(
            url: url,
            destination: destination,
            headers: headers,
            target: target,
            existingFile: existingFile,
            retry: retry,
            transfer: TransferOptions(connectTimeout: 5, stallTimeout: stallTimeout),
            progressInterval: 0.02)
    }

    /// Starts the download and watches it to its end.
    static func run(
        _ request: DownloadRequest, engine: TransportEngine = .platformDefault, timeout: Double = 30
    ) async throws -> WatchedDownload {
        let download = try Downloader(engine: engine).download(request)
        return try await watch(download, timeout: timeout)
    }

    /// Collects every event of `download` until the terminal one; `onEvent` may steer it
    /// (pause, resume, cancel). On timeout the download is cancelled and an error thrown.
    static func watch(
        _ download: Download,
        timeout: Double = 30,
        onEvent: @escaping @Sendable (DownloadEvent) -> Void = { _ in }
    ) async throws -> WatchedDownload {
        let stream = download.events
        let cancel: @Sendable () -> Void = { download.cancel() }
        let events = try await withTimeout(seconds: timeout, onTimeout: cancel) {
            var collected: [DownloadEvent] = []
            for await event in stream {
                collected.append(event)
                onEvent(event)
            }
            return collected
        }
        return WatchedDownload(events: events)
    }

    static func withTimeout<T: Sendable>(
        seconds: Double,
        onTimeout: @escaping @Sendable () -> Void,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: .seconds(seconds))
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            guard let first else {
                onTimeout()
                throw FaultHarnessTimeout(description: "timed out after \(seconds) s")
            }
            return first
        }
    }

    static func kind(of event: DownloadEvent) -> String {
        switch event {
        case .started: "started"
        case .response: "response"
        case .progress: "progress"
        case .restarted: "restarted"
        case .retrying: "retrying"
        case .mirror: "mirror"
        case .paused: "paused"
        case .completed: "completed"
        case .failed: "failed"
        case .cancelled: "cancelled"
        }
    }

    /// GET requests for `path` the server saw, in order.
    static func requests(_ server: FaultServer, _ path: String = FaultHarness.path) -> [RecordedRequest] {
        server.requests.filter { $0.path == path }
    }

    static func partialPath(_ destination: String) -> String { destination + ".haul-partial" }
    static func recordPath(_ destination: String) -> String { destination + ".haul-resume" }

    static func exists(_ path: String) -> Bool {
        FileManager.default.fileExists(atPath: path)
    }

    static func contents(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { [UInt8]($0) }
    }

    static func write(_ bytes: [UInt8], to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// Records an issue naming the length and first differing byte, rather than printing megabytes.
    static func expectFile(
        _ path: String,
        equals expected: [UInt8],
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard let actual = contents(path) else {
            Issue.record("\(path) does not exist", sourceLocation: sourceLocation)
            return
        }
        guard actual != expected else { return }
        let firstDifference =
            zip(actual, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            ?? min(actual.count, expected.count)
        Issue.record(
            "\(path) has \(actual.count) bytes, expected \(expected.count); first difference at byte \(firstDifference)",
            sourceLocation: sourceLocation)
    }

    /// A resume record as Haul itself would write it for a whole-file download of `url`.
    static func record(
        for request: DownloadRequest,
        etag: String? = "\"v1\"",
        totalLength: Int64?,
        syncedLength: Int64,
        bootID: String? = BootID.current
    ) -> ResumeRecord {
        ResumeRecord(
            originalURL: request.url.absoluteString,
            finalURL: request.url.absoluteString,
            method: request.method,
            validators: Validators(etag: etag.flatMap { EntityTag(headerValue: $0) }),
            totalLength: totalLength,
            finalLength: totalLength,
            syncedLength: syncedLength,
            bootID: bootID)
    }
}
