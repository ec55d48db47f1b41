import Foundation
import Haul
import HaulCore
import HaulEngine
import HaulTestSupport
import Testing

/// The same conformance, one level up: whole downloads through Haul's rules on each engine
/// (resume verified by If-Range, redirects by Haul's policy), against the fault server and
/// nginx, TLS included. An engine's known limitation is an expectation of its own.
@Suite("Transport conformance: downloads on every engine", .serialized)
struct TransportConformanceDownloadTests {
    let body = TestData.bytes(count: 600_000, seed: 137)

    @Test(.timeLimit(.minutes(1)), arguments: TransportEngine.available)
    func aDropIsResumedByRangeWithIfRange(engine: TransportEngine) async throws {
        let server = try FaultServer()
        server.setResource(FaultHarness.path, body: body)
        server.enqueueFaults(FaultHarness.path, [.dropAfter(bytes: 250_000)])
        let directory = try TemporaryDirectory()
        let watched = try await FaultHarness.run(
            FaultHarness.request(server, to: .file(directory.file("f"))), engine: engine)
        #expect(watched.completion != nil, "\(String(describing: watched.error))")
        FaultHarness.expectFile(directory.file("f"), equals: body)
        let resumed = try #require(server.requests.last)
        #expect(server.requests.count == 2)
        #expect(resumed.header("Range")?.hasPrefix("bytes=") == true)
        #expect(resumed.header("If-Range") == "\"v1\"")
    }

    @Test(.timeLimit(.minutes(1)), arguments: TransportEngine.available)
    func aFileChangedBetweenAttemptsIsNeverSpliced(engine: TransportEngine) async throws {
        let server = try FaultServer()
        let newer = TestData.bytes(count: 600_000, seed: 138)
        server.setResource(FaultHarness.path, body: body)
        server.enqueueFaults(
            FaultHarness.path, [.dropAfter(bytes: 250_000), .replaceResource(body: newer, etag: "\"v2\"", lastModified: nil)])
        let directory = try TemporaryDirectory()
        let watched = try await FaultHarness.run(
            FaultHarness.request(server, to: .file(directory.file("f"))), engine: engine)
        #expect(watched.completion != nil, "\(String(describing: watched.error))")
        // If-Range did not match: the server sent the whole new version, which replaced the old bytes.
        FaultHarness.expectFile(directory.file("f"), equals: newer)
    }

    @Test(.timeLimit(.minutes(1)), arguments: TransportEngine.available)
    func credentialsNeverFollowARedirectToAnotherOrigin(engine: TransportEngine) async throws {
        let server = try FaultServer()
        let other = try FaultServer()
        other.setResource(FaultHarness.path, body: body)
        server.setPersistentFaults("/away", [.redirect(status: 302, location: other.url(FaultHarness.path))])
        let directory = try TemporaryDirectory()
        let headers = HTTPHeaders([("Authorization", "Bearer secret"), ("Cookie", "session=1")])
        let watched = try await FaultHarness.run(
            FaultHarness.request(server, "/away", to: .file(directory.file("f")), headers: headers), engine: engine)
        #expect(watched.completion != nil, "\(String(describing: watched.error))")
        FaultHarness.expectFile(directory.file("f"), equals: body)
        #expect(server.requests.first?.header("Authorization") == "Bearer secret")
        let away = try #require(other.requests.first)
        #expect(away.header("Authorization") == nil)
        #expect(away.header("Cookie") == nil)
    }

    @Test(.timeLimit(.minutes(1)), arguments: TransportEngine.available)
    func aRedirectLoopEnds(engine: TransportEngine) async throws {
        let server = try FaultServer()
        server.setPersistentFaults("/x", [.redirect(status: 302, location: "/y")])
        server.setPersistentFaults("/y", [.redirect(status: 301, location: "/x")])
        let directory = try TemporaryDirectory()
        let watched = try await FaultHarness.run(
            FaultHarness.request(server, "/x", to: .file(directory.file("f"))), engine: engine)
        #expect(watched.error?.category == .protocolViolation)
        #expect(server.requests.map(\.path) == ["/x", "/y"])
    }

    @Test(.timeLimit(.minutes(1)), arguments: TransportEngine.available)
    func aCompressedAnswerToIdentity(engine: TransportEngine) async throws {
        let server = try FaultServer()
        server.setResource(FaultHarness.path, body: body)
        server.setPersistentFaults(FaultHarness.path, [.gzip])
        let directory = try TemporaryDirectory()
        let watched = try await FaultHarness.run(
            FaultHarness.request(server, to: .file(directory.file("f")), retry: FaultHarness.noRetry), engine: engine)
        switch engine {
        case .curl:
            // Stored exactly as sent (the fault server labels the stored bytes gzip without coding them).
            #expect(watched.completion != nil, "\(String(describing: watched.error))")
            FaultHarness.expectFile(directory.file("f"), equals: body)
        case .urlsession:
            // Limitation: URLSession decodes by itself, so such a body is refused, not stored changed.
            #expect(watched.error?.category == .protocolViolation, "\(String(describing: watched.error))")
            #expect(watched.error?.message.contains("decodes it by itself") == true)
            #expect(!FileManager.default.fileExists(atPath: directory.file("f")))
        }
    }

    @Test(.timeLimit(.minutes(1)), arguments: TransportEngine.available)
    func aSpeedLimit(engine: TransportEngine) async throws {
        let server = try FaultServer()
        server.setResource(FaultHarness.path, body: body)
        let directory = try TemporaryDirectory()
        var request = try FaultHarness.request(server, to: .file(directory.file("f")))
        request.rateLimiter = RateLimiter(bytesPerSecond: 2_000_000)
        let watched = try await FaultHarness.run(request, engine: engine)
        if engine.hasBackpressure {
            #expect(watched.completion != nil, "\(String(describing: watched.error))")
            FaultHarness.expectFile(directory.file("f"), equals: body)
        } else {
            // Limitation: the limiter slows the handler, not the network, so the library refuses it.
            #expect(watched.error?.category == .engine, "\(String(describing: watched.error))")
            #expect(server.requests.isEmpty)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
        }
    }

    @Test(.timeLimit(.minutes(1)), arguments: TransportEngine.available)
    func repeatedHeaderFields(engine: TransportEngine) throws {
        let server = try FaultServer()
        server.setResource("/f", body: [1, 2, 3])
        let expiring = "a=1; Expires=Wed, 21 Oct 2026 07:28:00 GMT; Path=/"
        server.enqueueFaults("/f", [.combined([.header(name: "Set-Cookie", value: expiring), .header(name: "Set-Cookie", value: "b=2")])])
        let recorder = TransportRecorder()
        let request = TransferRequest(url: try #require(URL(string: server.url("/f"))))
        #expect(recorder.perform(try #require(engine.makeTransport()), request, TransferOptions()) == .completed)
        let cookies = recorder.head?.headers.filter { $0.name.lowercased() == "set-cookie" }.map(\.value)
        // URLSession joins fields of one name; Set-Cookie is split again (a date's comma is not a split).
        #expect(cookies == [expiring, "b=2"])
    }

    @Test(.timeLimit(.minutes(1)), arguments: TransportEngine.available)
    func aHandlerSlowerThanTheNetwork(engine: TransportEngine) throws {
        let server = try FaultServer()
        let large = TestData.bytes(count: 4 << 20, seed: 140)
        server.setResource("/f", body: large)
        let request = TransferRequest(url: try #require(URL(string: server.url("/f"))))
        // A slow disk: 2 ms a chunk. A small bound on waiting chunks makes URLSession's lack of
        // backpressure visible with a small file (the default bound is 2,048 chunks).
        let transport: any HTTPTransport = engine == .urlsession ? URLSessionTransport(maxQueuedChunks: 8) : try #require(engine.makeTransport())
        let recorder = TransportRecorder(microsecondsPerChunk: 2000)
        let outcome = recorder.perform(transport, request, TransferOptions())
        if engine.hasBackpressure {
            // The engine waits for each write: the whole body arrives, whatever the pace.
            #expect(outcome == .completed)
            #expect(recorder.body == large)
        } else {
            // Limitation: it reads on, so past the bound the transfer ends (retryable: resumed by
            // range), the bytes before it intact.
            guard case .failed(let error) = outcome else {
                Issue.record("expected the backlog bound to end the transfer, got \(outcome)")
                return
            }
            #expect(error.kind == .connectionLost && error.isRetryable)
            #expect(error.message.contains("no backpressure"), "\(error.message)")
            #expect(recorder.body == Array(large[..<recorder.body.count]))
            #expect(recorder.body.count < large.count)
        }
        #expect(recorder.contractViolations == 0)
    }

    @Test(.timeLimit(.minutes(2)), arguments: TransportEngine.available)
    func nginxWithSegmentsAndAResume(engine: TransportEngine) async throws {
        let root = try TemporaryDirectory(prefix: "haul-conf-root")
        let large = TestData.bytes(count: 24 << 20, seed: 139)
        try Data(large).write(to: URL(fileURLWithPath: root.file("large.bin")))
        let nginx = try NginxServer(documentRoot: root.path, limitRate: "8m")
        let directory = try TemporaryDirectory()
        var request = DownloadRequest(
            url: try #require(URL(string: nginx.baseURL + "/limited/large.bin")), destination: .file(directory.file("large.bin")),
            retry: FaultHarness.fastRetry)
        request.connections = 4
        // One run paused part-way (at 4 MiB), then a new download of the same request resumes it.
        let first = try Downloader(engine: engine).download(request)
        for await event in first.events {
            if case .progress(let progress) = event, progress.bytes >= 4 << 20 { first.pause() }
            if case .paused = event { break }
            if case .completed = event { Issue.record("finished before the pause") }
        }
        let second = try await FaultHarness.run(request, engine: engine, timeout: 60)
        #expect(second.completion != nil, "\(String(describing: second.error)) \(second.events.suffix(3))")
        FaultHarness.expectFile(directory.file("large.bin"), equals: large)
        let ranged = nginx.accessLog().filter { $0.status == 206 }
        #expect(ranged.count >= 4, "expected segment requests, got \(nginx.accessLog().map(\.status))")
    }

    @Test(.timeLimit(.minutes(1)), arguments: TransportEngine.available)
    func tlsWithAGeneratedCA(engine: TransportEngine) async throws {
        let root = try TemporaryDirectory(prefix: "haul-conf-tls")
        let certificates = try TemporaryDirectory(prefix: "haul-conf-certs")
        try Data(body).write(to: URL(fileURLWithPath: root.file("file.bin")))
        let made = try TestCertificates.make(in: certificates.path)
        let nginx = try NginxServer(documentRoot: root.path, tls: NginxTLS(certificatePath: made.serverCert, keyPath: made.serverKey))
        let url = try #require(URL(string: nginx.baseURL + "/file.bin"))
        let transport = try #require(engine.makeTransport())

        // Without the CA, every engine refuses the certificate.
        let untrusted = TransportRecorder()
        let refused = untrusted.perform(transport, TransferRequest(url: url), TransferOptions())
        #expect(refused.failureKind == .tls, "\(refused)")
        #expect(untrusted.heads.isEmpty)

        // With it: libcurl trusts it; FoundationNetworking cannot be given a CA file (a limitation,
        // refused before anything is sent).
        let trusting = TransportRecorder()
        let outcome = trusting.perform(transport, TransferRequest(url: url), TransferOptions(caFile: made.caCert))
        if engine.limitations.contains(where: { $0.need == .caFile }) {
            #expect(outcome.failureKind == .optionRefused, "\(outcome)")
            #expect(nginx.accessLog().isEmpty)
        } else {
            #expect(outcome == .completed)
            #expect(trusting.body == body)
        }
    }
}
