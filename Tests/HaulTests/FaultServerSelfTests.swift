import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

private let tenBytes = Array("0123456789".utf8)

private func pattern(_ count: Int) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
}

private func elapsed(_ since: Date) -> Double { Date().timeIntervalSince(since) }

// MARK: - Tests

@Suite struct FaultServerSelfTests {
    @Test func servesWholeResourceWithResourceHeaders() throws {
        // GIVEN a resource with validators
        let server = try FaultServer()
        server.setResource(
            "/a.bin", body: tenBytes, etag: "\"abc\"", lastModified: "Tue, 01 Jul 2025 10:00:00 GMT",
            contentType: "text/plain", extraHeaders: [("X-Extra", "1")])
        // WHEN it is fetched
        let response = try fetch(server, "/a.bin")
        // THEN it comes back whole with every header
        #expect(response.status == 200)
        #expect(response.body == tenBytes)
        #expect(response.header("Content-Length") == "10")
        #expect(response.header("Accept-Ranges") == "bytes")
        #expect(response.header("ETag") == "\"abc\"")
        #expect(response.header("Last-Modified") == "Tue, 01 Jul 2025 10:00:00 GMT")
        #expect(response.header("Content-Type") == "text/plain")
        #expect(response.header("X-Extra") == "1")
        #expect(server.baseURL == "http://127.0.0.1:\(server.port)")
        #expect(server.url("/a.bin") == "http://127.0.0.1:\(server.port)/a.bin")
    }

    @Test func omitsValidatorsWhenUnsetAndMatchesPathWithoutQuery() throws {
        let server = try FaultServer()
        server.setResource("/plain", body: tenBytes, etag: nil)
        let response = try fetch(server, "/plain?token=1")
        #expect(response.status == 200)
        #expect(response.header("ETag") == nil)
        #expect(response.header("Last-Modified") == nil)
        #expect(server.requests.first?.path == "/plain?token=1")
    }

    @Test func missingResourceIs404AndEmptyResourceIs200() throws {
        let server = try FaultServer()
        server.setResource("/empty", body: [])
        #expect(try fetch(server, "/nope").status == 404)
        let empty = try fetch(server, "/empty")
        #expect(empty.status == 200)
        #expect(empty.header("Content-Length") == "0")
        #expect(empty.body.isEmpty)
    }

    @Test func headSendsHeadersOnlyAndKeepsTheConnectionUsable() throws {
        let server = try FaultServer()
        server.setResource("/a", body: tenBytes)
        let client = try TestClient(port: server.port)
        client.send("HEAD", "/a")
        let head = try client.readResponse(forHead: true)
        #expect(head.status == 200)
        #expect(head.header("Content-Length") == "10")
        // No body bytes were sent: the next response on the socket starts with a status line.
        client.send("GET", "/a")
        let get = try client.readResponse()
        #expect(get.status == 200)
        #expect(get.body == tenBytes)
        #expect(server.requests.map(\.method) == ["HEAD", "GET"])
        #expect(server.bodyBytesSent("/a") == 10)
    }

    @Test(arguments: [
        ("bytes=2-5", "bytes 2-5/10", "2345"),
        ("bytes=7-", "bytes 7-9/10", "789"),
        ("bytes=-3", "bytes 7-9/10", "789"),
        ("bytes=5-100", "bytes 5-9/10", "56789"),
        ("bytes=-100", "bytes 0-9/10", "0123456789"),
        ("BYTES = 0-0", "", ""),  // whitespace around "=" is not in the grammar: ignored
        ("bytes=9-9", "bytes 9-9/10", "9"),
    ])
    func rangeForms(range: String, contentRange: String, body: String) throws {
        let server = try FaultServer()
        server.setResource("/r", body: tenBytes)
        let response = try fetch(server, "/r", headers: [("Range", range)])
        if contentRange.isEmpty {
            #expect(response.status == 200)
            #expect(response.body == tenBytes)
        } else {
            #expect(response.status == 206)
            #expect(response.header("Content-Range") == contentRange)
            #expect(response.header("Content-Length") == String(body.utf8.count))
            #expect(response.text == body)
        }
    }

    @Test(arguments: ["bytes=10-", "bytes=-0", "bytes=25-30"])
    func unsatisfiableRangeIs416WithTotal(range: String) throws {
        let server = try FaultServer()
        server.setResource("/r", body: tenBytes)
        let response = try fetch(server, "/r", headers: [("Range", range)])
        #expect(response.status == 416)
        #expect(response.header("Content-Range") == "bytes */10")
        #expect(server.bodyBytesSent("/r") == 0)
    }

    @Test(arguments: ["bytes=5-2", "bytes=0-1,4-5", "items=0-3", "bytes=a-b", "bytes=-"])
    func malformedOrMultiRangeIsIgnored(range: String) throws {
        let server = try FaultServer()
        server.setResource("/r", body: tenBytes)
        let response = try fetch(server, "/r", headers: [("Range", range)])
        #expect(response.status == 200)
        #expect(response.header("Content-Range") == nil)
        #expect(response.body == tenBytes)
    }

    @Test(arguments: [
        ("\"v1\"", 206),  // strong match
        ("\"v2\"", 200),  // other tag
        ("W/\"v1\"", 200),  // weak tags never match
        ("Tue, 01 Jul 2025 10:00:00 GMT", 206),  // exact date
        ("Wed, 02 Jul 2025 10:00:00 GMT", 200),  // other date
    ])
    func ifRangeDecidesWhetherTheRangeIsHonoured(ifRange: String, expected: Int) throws {
        let server = try FaultServer()
        server.setResource("/r", body: tenBytes, etag: "\"v1\"", lastModified: "Tue, 01 Jul 2025 10:00:00 GMT")
        let response = try fetch(server, "/r", headers: [("Range", "bytes=4-"), ("If-Range", ifRange)])
        #expect(response.status == expected)
        #expect(response.text == (expected == 206 ? "456789" : "0123456789"))
    }

    @Test func ifRangeWithWeakCurrentTagNeverMatches() throws {
        let server = try FaultServer()
        server.setResource("/r", body: tenBytes, etag: "W/\"v1\"")
        let response = try fetch(server, "/r", headers: [("Range", "bytes=4-"), ("If-Range", "W/\"v1\"")])
        #expect(response.status == 200)
    }

    @Test func status416FaultWithAndWithoutContentRange() throws {
        let server = try FaultServer()
        server.setResource("/r", body: tenBytes)
        server.enqueueFaults("/r", [.status416(withContentRange: true), .status416(withContentRange: false)])
        let first = try fetch(server, "/r", headers: [("Range", "bytes=2-")])
        let second = try fetch(server, "/r", headers: [("Range", "bytes=2-")])
        #expect(first.status == 416)
        #expect(first.header("Content-Range") == "bytes */10")
        #expect(second.status == 416)
        #expect(second.header("Content-Range") == nil)
        #expect(second.header("ETag") == nil)
    }

    @Test func ignoreRangeSendsTheWholeBody() throws {
        let server = try FaultServer()
        server.setResource("/r", body: tenBytes)
        server.enqueueFaults("/r", [.ignoreRange])
        let ignored = try fetch(server, "/r", headers: [("Range", "bytes=4-")])
        let honoured = try fetch(server, "/r", headers: [("Range", "bytes=4-")])
        #expect(ignored.status == 200)
        #expect(ignored.body == tenBytes)
        #expect(honoured.status == 206)
    }

    @Test func dropAfterCutsTheBodyAndCountsWhatWasSent() throws {
        let server = try FaultServer()
        let body = pattern(100_000)
        server.setResource("/big", body: body)
        server.enqueueFaults("/big", [.dropAfter(bytes: 30_000)])
        let cut = try fetch(server, "/big")
        #expect(cut.status == 200)
        #expect(cut.header("Content-Length") == "100000")
        #expect(!cut.isComplete)
        #expect(Data(cut.body) == Data(body[0..<30_000]))
        #expect(server.bodyBytesSent("/big") == 30_000)
        // Then the queue is used up and the resource is served normally.
        let whole = try fetch(server, "/big", headers: [("Range", "bytes=30000-")])
        #expect(whole.status == 206)
        #expect(Data(whole.body) == Data(body[30_000...]))
        #expect(server.bodyBytesSent("/big") == 100_000)
    }

    @Test func stallSendsSomeBytesThenWaitsThenCloses() throws {
        let server = try FaultServer()
        server.setResource("/s", body: tenBytes)
        server.enqueueFaults("/s", [.stall(afterBytes: 4, seconds: 0.4)])
        let start = Date()
        let response = try fetch(server, "/s")
        #expect(elapsed(start) >= 0.35)
        #expect(response.text == "0123")
        #expect(!response.isComplete)
    }

    @Test func chunkedHonoursRangeAcrossSeveralChunks() throws {
        let server = try FaultServer()
        let body = pattern(50_000)
        server.setResource("/c", body: body)
        server.setPersistentFaults("/c", [.chunked])
        let whole = try fetch(server, "/c")
        #expect(whole.header("Transfer-Encoding") == "chunked")
        #expect(whole.header("Content-Length") == nil)
        #expect(whole.isComplete)
        #expect(Data(whole.body) == Data(body))
        let part = try fetch(server, "/c", headers: [("Range", "bytes=1000-40999")])
        #expect(part.status == 206)
        #expect(part.header("Content-Range") == "bytes 1000-40999/50000")
        #expect(Data(part.body) == Data(body[1000..<41_000]))
    }

    @Test func closeDelimitedBodyEndsAtClose() throws {
        let server = try FaultServer()
        server.setResource("/d", body: tenBytes)
        server.enqueueFaults("/d", [.closeDelimited])
        let response = try fetch(server, "/d")
        #expect(response.header("Content-Length") == nil)
        #expect(response.header("Transfer-Encoding") == nil)
        #expect(response.body == tenBytes)
    }

    @Test func wrongLengthAndExtraBytes() throws {
        let server = try FaultServer()
        server.setResource("/w", body: tenBytes)
        server.enqueueFaults("/w", [.wrongContentLength(delta: 5), .extraBytes(count: 3)])
        let short = try fetch(server, "/w")
        #expect(short.header("Content-Length") == "15")
        #expect(short.body == tenBytes)
        #expect(!short.isComplete)
        let client = try TestClient(port: server.port)
        client.send("GET", "/w")
        let long = try client.readResponse()
        #expect(long.header("Content-Length") == "10")
        #expect(long.body == tenBytes)
        #expect(client.readToEnd().count == 3)
    }

    @Test func redirectRetryAfterAndErrorStatus() throws {
        let server = try FaultServer()
        server.setResource("/x", body: tenBytes)
        server.enqueueFaults(
            "/x",
            [
                .redirect(status: 307, location: "/elsewhere"),
                .retryAfter(status: 503, value: "2"),
                .status(500, body: "boom"),
            ])
        let redirect = try fetch(server, "/x")
        #expect(redirect.status == 307)
        #expect(redirect.header("Location") == "/elsewhere")
        #expect(redirect.header("ETag") == nil)
        let retry = try fetch(server, "/x")
        #expect(retry.status == 503)
        #expect(retry.header("Retry-After") == "2")
        let error = try fetch(server, "/x")
        #expect(error.status == 500)
        #expect(error.text.contains("boom"))
        #expect(error.header("Content-Type") == "text/html")
        #expect(server.bodyBytesSent("/x") == 0)
        #expect(try fetch(server, "/x").status == 200)
    }

    @Test func headerFaultsCombine() throws {
        let server = try FaultServer()
        server.setResource("/h", body: tenBytes)
        server.enqueueFaults("/h", [.combined([.contentDisposition("attachment; filename=\"f.txt\""), .gzip])])
        let response = try fetch(server, "/h")
        #expect(response.header("Content-Disposition") == "attachment; filename=\"f.txt\"")
        #expect(response.header("Content-Encoding") == "gzip")
        #expect(response.body == tenBytes)
    }

    @Test func replaceResourceChangesBodyAndValidators() throws {
        let server = try FaultServer()
        server.setResource("/f", body: tenBytes, etag: "\"v1\"")
        server.enqueueFaults("/f", [.replaceResource(body: Array("new".utf8), etag: "\"v2\"", lastModified: nil)])
        let changed = try fetch(server, "/f", headers: [("Range", "bytes=5-"), ("If-Range", "\"v1\"")])
        #expect(changed.status == 200)
        #expect(changed.header("ETag") == "\"v2\"")
        #expect(changed.text == "new")
        let after = try fetch(server, "/f")
        #expect(after.header("ETag") == "\"v2\"")
        #expect(after.text == "new")
    }

    @Test func recordsMethodsHeadersAndBodies() throws {
        let server = try FaultServer()
        server.setResource("/up", body: tenBytes)
        let payload = Array("hello body".utf8)
        let post = try fetch(server, "/up?x=1", method: "POST", headers: [("X-Token", "abc")], body: payload)
        #expect(post.status == 200)
        // A chunked PUT with Expect: 100-continue is decoded and recorded too.
        let client = try TestClient(port: server.port)
        client.sendRaw(
            Array(
                ("PUT /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n"
                    + "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n").utf8))
        #expect(try client.readResponse().status == 200)
        let recorded = server.requests
        try #require(recorded.count == 2)
        #expect(recorded[0].method == "POST")
        #expect(recorded[0].path == "/up?x=1")
        #expect(recorded[0].header("x-token") == "abc")
        #expect(recorded[0].header("content-length") == "10")
        #expect(recorded[0].body == payload)
        #expect(recorded[1].method == "PUT")
        #expect(recorded[1].body == Array("abcde".utf8))
    }

    @Test func keepAliveServesSeveralRequestsAndHonoursClose() throws {
        let server = try FaultServer()
        server.setResource("/k", body: tenBytes)
        let client = try TestClient(port: server.port)
        client.send("GET", "/k")
        #expect(try client.readResponse().body == tenBytes)
        client.send("GET", "/k", headers: [("Range", "bytes=0-1")])
        #expect(try client.readResponse().text == "01")
        client.send("GET", "/k", headers: [("Connection", "close")])
        let last = try client.readResponse()
        #expect(last.header("Connection") == "close")
        #expect(client.peerClosed())
        #expect(server.requests.count == 3)
        #expect(server.bodyBytesSent("/k") == 22)
    }

    @Test func throttleAndDelayHeadersSlowTheResponse() throws {
        let server = try FaultServer()
        let body = pattern(30_000)
        server.setResource("/t", body: body)
        server.enqueueFaults("/t", [.combined([.delayHeaders(seconds: 0.2), .throttle(bytesPerSecond: 100_000)])])
        let start = Date()
        let response = try fetch(server, "/t")
        #expect(elapsed(start) >= 0.4)  // 0.2 s delay + 0.3 s of throttled body, minus slack
        #expect(Data(response.body) == Data(body))
    }

    @Test func servesLargeBodiesQuickly() throws {
        let server = try FaultServer()
        var body = [UInt8](repeating: 0xAB, count: 64 << 20)
        body[body.count - 1] = 0x01
        server.setResource("/large", body: body)
        let start = Date()
        let response = try fetch(server, "/large")
        #expect(elapsed(start) < 5)
        #expect(response.body.count == body.count)
        #expect(response.body.last == 0x01)
        #expect(server.bodyBytesSent("/large") == 64 << 20)
    }

    @Test func stopClosesLiveConnections() throws {
        let server = try FaultServer()
        server.setResource("/s", body: tenBytes)
        server.setPersistentFaults("/s", [.stall(afterBytes: 2, seconds: 30)])
        let client = try TestClient(port: server.port)
        client.send("GET", "/s")
        let start = Date()
        Thread.sleep(forTimeInterval: 0.1)
        server.stop()
        let response = try client.readResponse()
        #expect(response.text == "01")
        #expect(elapsed(start) < 3)
        #expect(throws: (any Error).self) { try TestClient(port: server.port) }
    }

    @Test func clientDisconnectMidBodyDoesNotHurtTheServer() throws {
        let server = try FaultServer()
        server.setResource("/big", body: pattern(8 << 20))
        do {
            let client = try TestClient(port: server.port)
            client.send("GET", "/big")
            // Only the head is read; the client socket closes at the end of this scope, mid-body.
            #expect(try client.readResponse(forHead: true).status == 200)
        }
        Thread.sleep(forTimeInterval: 0.1)
        #expect(try fetch(server, "/big", headers: [("Range", "bytes=0-3")]).status == 206)
    }
}
