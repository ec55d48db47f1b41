import Foundation
import HaulCore
import HaulEngine
import HaulTestSupport
import Testing

/// One suite for every engine: the same requests against the fault-injecting server, the same
/// expectations. Where an engine cannot behave like libcurl, the difference is an expectation of
/// its own here (`limitation`), listed in `TransportEngine.limitations`, never a skipped test.
@Suite("Transport conformance: every engine against the fault server", .serialized)
struct TransportConformanceTests {
    let body = TestData.bytes(count: 200_000, seed: 131)

    func serve(_ path: String = "/f", etag: String? = "\"v1\"") throws -> FaultServer {
        let server = try FaultServer()
        server.setResource(path, body: body, etag: etag, lastModified: "Mon, 02 Nov 2026 10:00:00 GMT")
        return server
    }

    func request(_ server: FaultServer, _ path: String = "/f") throws -> TransferRequest {
        var request = TransferRequest(url: try #require(URL(string: server.url(path))))
        request.headers.set("Accept-Encoding", "identity")
        request.headers.set("User-Agent", "haul-conformance")
        return request
    }

    func transport(_ engine: TransportEngine) throws -> any HTTPTransport {
        try #require(engine.makeTransport())
    }

    @Test(arguments: TransportEngine.available)
    func wholeBodyAndTheHeadAsSent(engine: TransportEngine) throws {
        let server = try serve()
        var request = try request(server)
        request.headers.set("X-Custom", "one two")
        // An empty value leaves the field out (curl's rule for `-H "Name:"`), on both engines.
        request.headers.set("X-Empty", "")
        let recorder = TransportRecorder()
        let outcome = recorder.perform(try transport(engine), request, TransferOptions())
        #expect(outcome == .completed)
        #expect(recorder.head?.status == 200)
        #expect(recorder.head?.contentLength == Int64(body.count))
        #expect(recorder.head?.headers["ETag"] == "\"v1\"")
        #expect(recorder.head?.headers["last-modified"] == "Mon, 02 Nov 2026 10:00:00 GMT")
        #expect(recorder.body == body)
        #expect(recorder.contractViolations == 0)
        let sent = try #require(server.requests.first)
        #expect(server.requests.count == 1)
        #expect(sent.method == "GET")
        #expect(sent.header("X-Custom") == "one two")
        #expect(sent.header("Accept-Encoding") == "identity")
        #expect(sent.header("User-Agent") == "haul-conformance")
        #expect(sent.header("Accept") == "*/*")
        #expect(sent.header("Cookie") == nil)
        // Exactly these fields; URLSession adds two of its own (a listed limitation).
        var expected: Set = ["host", "x-custom", "accept-encoding", "user-agent", "accept"]
        if engine == .urlsession { expected.formUnion(["connection", "accept-language"]) }
        #expect(Set(sent.headers.map { $0.name.lowercased() }) == expected)
    }

    @Test(arguments: TransportEngine.available, [103, 100])
    func interimHeadsAreNeverTheResponse(engine: TransportEngine, interim: Int) throws {
        let server = try serve()
        server.enqueueFaults("/f", [.informational(interim)])
        let recorder = TransportRecorder()
        #expect(recorder.perform(try transport(engine), try request(server), TransferOptions()) == .completed)
        #expect(recorder.heads.map(\.status) == [200])
        #expect(recorder.body == body)
        #expect(recorder.contractViolations == 0)
    }

    @Test(arguments: TransportEngine.available)
    func aConnectionClosedWithoutAReplyIsALostConnection(engine: TransportEngine) throws {
        let server = try serve()
        server.enqueueFaults("/f", [.closeWithoutReply])
        let recorder = TransportRecorder()
        let outcome = recorder.perform(try transport(engine), try request(server), TransferOptions())
        // Retryable on both: a server restarting, a proxy or balancer cutting a connection.
        #expect(outcome.failureKind == .connectionLost, "\(outcome)")
        #expect(recorder.heads.isEmpty)
    }

    @Test(arguments: TransportEngine.available)
    func headerLinesWithoutASpaceAfterTheColon(engine: TransportEngine) throws {
        let server = try serve()
        server.enqueueFaults("/f", [.headersWithoutSpace])
        let recorder = TransportRecorder()
        let outcome = recorder.perform(try transport(engine), try request(server), TransferOptions())
        switch engine {
        case .curl:
            #expect(outcome == .completed)
            #expect(recorder.head?.headers["ETag"] == "\"v1\"")
            #expect(recorder.body == body)
        case .urlsession:
            // Limitation of FoundationNetworking 6.3.1: such a head fails the response, never a
            // wrong one handed over.
            #expect(outcome.failureKind != nil, "\(outcome)")
            #expect(recorder.body.isEmpty)
        }
    }

    @Test(.timeLimit(.minutes(1)), arguments: TransportEngine.available)
    func aSlowHeadWithoutAStallTimeout(engine: TransportEngine) throws {
        let server = try serve()
        server.enqueueFaults("/f", [.delayHeaders(seconds: 2)])
        server.enqueueFaults("/f", [.delayHeaders(seconds: 2)])
        let recorder = TransportRecorder()
        // No stall timeout ("never") and no connect timeout: both wait for the head.
        let patient = recorder.perform(try transport(engine), try request(server), TransferOptions(connectTimeout: nil, stallTimeout: nil))
        #expect(patient == .completed)
        #expect(recorder.body == body)
        // A connect timeout shorter than the wait: libcurl is connected in time and waits;
        // URLSession cannot tell connecting from waiting for the head (a listed limitation).
        let hasty = TransportRecorder()
        let outcome = hasty.perform(try transport(engine), try request(server), TransferOptions(connectTimeout: 1, stallTimeout: nil))
        switch engine {
        case .curl: #expect(outcome == .completed)
        case .urlsession: #expect(outcome.failureKind == .timeout, "\(outcome)")
        }
    }

    @Test(arguments: TransportEngine.available)
    func rangeAndIfRangeGiveThePartialContent(engine: TransportEngine) throws {
        let server = try serve()
        var request = try request(server)
        request.headers.set("Range", "bytes=1000-")
        request.headers.set("If-Range", "\"v1\"")
        let recorder = TransportRecorder()
        #expect(recorder.perform(try transport(engine), request, TransferOptions()) == .completed)
        #expect(recorder.head?.status == 206)
        #expect(recorder.head?.contentRange == ContentRange(first: 1000, last: Int64(body.count - 1), completeLength: Int64(body.count)))
        #expect(recorder.body == Array(body[1000...]))
        #expect(server.requests.first?.header("Range") == "bytes=1000-")
        #expect(server.requests.first?.header("If-Range") == "\"v1\"")
    }

    @Test(arguments: TransportEngine.available)
    func aServerIgnoringRangeIsHandedOverAsIs(engine: TransportEngine) throws {
        let server = try serve()
        server.enqueueFaults("/f", [.ignoreRange])
        var request = try request(server)
        request.headers.set("Range", "bytes=1000-")
        let recorder = TransportRecorder(stopAtHead: true)
        let outcome = recorder.perform(try transport(engine), request, TransferOptions())
        // The head is the transport's whole answer: judging a 200 to a Range is Haul's, not the engine's.
        #expect(outcome == .stoppedByHandler)
        #expect(recorder.head?.status == 200)
        #expect(recorder.body.isEmpty)
    }

    @Test(arguments: TransportEngine.available)
    func unsatisfiableRange(engine: TransportEngine) throws {
        let server = try serve()
        server.enqueueFaults("/f", [.status416(withContentRange: true)])
        let recorder = TransportRecorder()
        var request = try request(server)
        request.headers.set("Range", "bytes=999999-")
        #expect(recorder.perform(try transport(engine), request, TransferOptions()) == .completed)
        #expect(recorder.head?.status == 416)
        #expect(recorder.head?.headers["Content-Range"] == "bytes */\(body.count)")
    }

    @Test(arguments: TransportEngine.available)
    func aDroppedConnectionIsALostConnectionWithTheBytesBeforeIt(engine: TransportEngine) throws {
        let server = try serve()
        server.enqueueFaults("/f", [.dropAfter(bytes: 50_000)])
        let recorder = TransportRecorder()
        let outcome = recorder.perform(try transport(engine), try request(server), TransferOptions())
        #expect(outcome.failureKind == .connectionLost, "\(outcome)")
        #expect(recorder.body == Array(body[..<50_000]))
        #expect(recorder.contractViolations == 0)
    }

    @Test(arguments: TransportEngine.available)
    func aLengthLongerThanTheBodyIsALostConnection(engine: TransportEngine) throws {
        let server = try serve()
        server.enqueueFaults("/f", [.wrongContentLength(delta: 100)])
        let recorder = TransportRecorder()
        let outcome = recorder.perform(try transport(engine), try request(server), TransferOptions())
        #expect(outcome.failureKind == .connectionLost, "\(outcome)")
        #expect(recorder.body == body)
    }

    @Test(arguments: TransportEngine.available)
    func bytesAfterTheAnnouncedLengthAreNotDelivered(engine: TransportEngine) throws {
        let server = try serve()
        server.enqueueFaults("/f", [.extraBytes(count: 500)])
        let recorder = TransportRecorder()
        #expect(recorder.perform(try transport(engine), try request(server), TransferOptions()) == .completed)
        #expect(recorder.body == body)
    }

    @Test(.timeLimit(.minutes(1)), arguments: TransportEngine.available)
    func aStallEndsTheTransferAfterTheStallTimeout(engine: TransportEngine) throws {
        let server = try serve()
        server.enqueueFaults("/f", [.stall(afterBytes: 30_000, seconds: 10)])
        let recorder = TransportRecorder()
        let started = ContinuousClock.now
        let outcome = recorder.perform(try transport(engine), try request(server), TransferOptions(stallTimeout: 1))
        #expect(outcome.failureKind == .stalled, "\(outcome)")
        #expect(ContinuousClock.now - started < .seconds(6))
        #expect(recorder.body == Array(body[..<30_000]))
    }

    @Test(arguments: TransportEngine.available, [Fault.chunked, .closeDelimited])
    func bodiesWithoutALength(engine: TransportEngine, framing: Fault) throws {
        let server = try serve()
        server.enqueueFaults("/f", [framing])
        let recorder = TransportRecorder()
        #expect(recorder.perform(try transport(engine), try request(server), TransferOptions()) == .completed)
        #expect(recorder.head?.contentLength == nil)
        #expect(recorder.body == body)
    }

    @Test(arguments: TransportEngine.available, [301, 302, 303, 307, 308])
    func redirectsAreHandedBackNotFollowed(engine: TransportEngine, status: Int) throws {
        let server = try serve()
        server.setResource("/g", body: [1, 2, 3])
        server.enqueueFaults("/f", [.redirect(status: status, location: server.url("/g"))])
        var request = try request(server)
        request.headers.set("Authorization", "Bearer secret")
        let recorder = TransportRecorder()
        #expect(recorder.perform(try transport(engine), request, TransferOptions()) == .completed)
        #expect(recorder.head?.status == status)
        #expect(recorder.head?.headers["Location"] == server.url("/g"))
        // The 3xx is the whole answer, its own small body included.
        #expect(String(decoding: recorder.body, as: UTF8.self).contains("moved"))
        // Only Haul's redirect policy sends the next request (and decides what it carries).
        #expect(server.requests.map(\.path) == ["/f"])
    }

    @Test(arguments: TransportEngine.available, [401, 403, 404, 410, 500, 503])
    func errorStatusesAreHandedOverWithTheirHeaders(engine: TransportEngine, status: Int) throws {
        let server = try serve()
        server.enqueueFaults(
            "/f", [.combined([.status(status, body: "no"), .header(name: "WWW-Authenticate", value: "Basic realm=\"files\"")])])
        let recorder = TransportRecorder()
        let outcome = recorder.perform(try transport(engine), try request(server), TransferOptions(stallTimeout: 5))
        #expect(outcome == .completed, "\(recorder.heads.map(\.status)) \(recorder.body.count)")
        #expect(recorder.head?.status == status)
        #expect(recorder.head?.headers["WWW-Authenticate"] == "Basic realm=\"files\"")
        #expect(String(decoding: recorder.body, as: UTF8.self).contains("no"))
        #expect(recorder.contractViolations == 0)
        // No engine answers a challenge by itself: one request, no credentials invented.
        #expect(server.requests.count == 1)
        #expect(server.requests.first?.header("Authorization") == nil)
    }

    @Test(arguments: TransportEngine.available)
    func methodAndBodyAsGiven(engine: TransportEngine) throws {
        let server = try serve()
        var request = try request(server)
        request.method = "POST"
        request.body = Array("name=value&x=1".utf8)
        request.headers.set("Content-Type", "application/x-www-form-urlencoded")
        let recorder = TransportRecorder()
        #expect(recorder.perform(try transport(engine), request, TransferOptions()) == .completed)
        let sent = try #require(server.requests.first)
        #expect(sent.method == "POST")
        #expect(sent.body == Array("name=value&x=1".utf8))
        #expect(sent.header("Expect") == nil)
    }

    @Test(arguments: TransportEngine.available)
    func headRequestsHaveNoBody(engine: TransportEngine) throws {
        let server = try serve()
        var request = try request(server)
        request.method = "HEAD"
        let recorder = TransportRecorder()
        #expect(recorder.perform(try transport(engine), request, TransferOptions()) == .completed)
        #expect(recorder.head?.contentLength == Int64(body.count))
        #expect(recorder.body.isEmpty)
        #expect(server.requests.first?.method == "HEAD")
    }

    @Test(arguments: TransportEngine.available)
    func theHandlerStopsTheTransfer(engine: TransportEngine) throws {
        let server = try serve()
        let recorder = TransportRecorder(stopAfterBytes: 20_000)
        #expect(recorder.perform(try transport(engine), try request(server), TransferOptions()) == .stoppedByHandler)
        #expect(recorder.body.count >= 20_000)
        #expect(recorder.body == Array(body[..<recorder.body.count]))
        #expect(recorder.contractViolations == 0)
    }

    @Test(.timeLimit(.minutes(1)), arguments: TransportEngine.available)
    func theAbortPollEndsASlowTransferPromptly(engine: TransportEngine) throws {
        let server = try serve()
        server.enqueueFaults("/f", [.throttle(bytesPerSecond: 20_000)])
        let recorder = TransportRecorder(abortAfterBytes: 10_000)
        let started = ContinuousClock.now
        #expect(recorder.perform(try transport(engine), try request(server), TransferOptions()) == .stoppedByHandler)
        #expect(ContinuousClock.now - started < .seconds(3))
        #expect(recorder.contractViolations == 0)
    }

    @Test(arguments: TransportEngine.available)
    func aRefusedConnectionIsAConnectFailure(engine: TransportEngine) throws {
        let gone = try FaultServer()
        let url = try #require(URL(string: gone.url("/f")))
        gone.stop()
        let recorder = TransportRecorder()
        let outcome = recorder.perform(try transport(engine), TransferRequest(url: url), TransferOptions())
        #expect(outcome.failureKind == .connect, "\(outcome)")
        #expect(recorder.heads.isEmpty)
    }

    @Test(arguments: TransportEngine.available)
    func onlyHTTPAndHTTPSAreFetched(engine: TransportEngine) throws {
        let recorder = TransportRecorder()
        let url = try #require(URL(string: "file:///etc/passwd"))
        let outcome = recorder.perform(try transport(engine), TransferRequest(url: url), TransferOptions())
        #expect(outcome.failureKind == .invalidURL, "\(outcome)")
        #expect(recorder.body.isEmpty)
    }
}
