import Foundation
import Testing

@testable import HaulServe

/// The request-head parser, the framing rules and the response bytes, without a socket.
@Suite("HTTP server: request heads, framing and responses (pure)")
struct HTTPParserTests {
    static func parse(_ text: String, limit: Int = 16 * 1024) -> HTTPHeadParser.Verdict {
        HTTPHeadParser.parse(ArraySlice(Array(text.utf8)), limit: limit)
    }

    /// The head of `text`, which must be a whole, valid one.
    static func head(_ text: String) throws -> HTTPRequestHead {
        guard case .head(let head, _) = parse(text) else { throw ParseFailure(text: text) }
        return head
    }

    struct ParseFailure: Error {
        let text: String
    }

    static func status(_ verdict: HTTPHeadParser.Verdict) -> Int? {
        if case .refused(let refusal) = verdict { return refusal.status }
        return nil
    }

    @Test func aWholeHeadIsParsedAndItsFieldsFoundWhateverTheirCase() throws {
        // GIVEN a head followed by the first bytes of a body
        let text = "POST /jsonrpc?x=1 HTTP/1.1\r\nHost: 127.0.0.1:6800\r\ncontent-LENGTH:  5 \r\nX-Two: a\r\nx-two: b\r\n\r\nhello"
        // WHEN it is parsed
        guard case .head(let head, let length) = Self.parse(text) else {
            Issue.record("not parsed: \(Self.parse(text))")
            return
        }
        // THEN the request line, the fields (trimmed) and the head's length are right
        #expect(head.method == "POST" && head.target == "/jsonrpc?x=1" && head.path == "/jsonrpc" && head.minorVersion == 1)
        #expect(head.header("Content-Length") == "5" && head.header("host") == "127.0.0.1:6800")
        #expect(head.values("X-TWO") == ["a", "b"])
        #expect(head.header("Missing") == nil)
        #expect(length == text.utf8.count - 5)
    }

    @Test func bareLineFeedsAndLeadingBlankLinesAreAccepted() throws {
        let head = try Self.head("\r\n\nGET / HTTP/1.0\nHost: x\n\n")
        #expect(head.method == "GET" && head.minorVersion == 0 && head.header("Host") == "x")
    }

    @Test func aHeadWithoutItsBlankLineIsIncompleteUntilTheLimitThen431() {
        #expect(Self.parse("GET / HTTP/1.1\r\nHost: x\r\n") == .incomplete)
        #expect(Self.parse("") == .incomplete)
        // 100 bytes without an end, limit 100: refused without waiting for more
        let long = "GET /" + String(repeating: "a", count: 95)
        #expect(Self.status(Self.parse(long, limit: 100)) == 431)
        #expect(Self.parse(String(long.dropLast()), limit: 100) == .incomplete)
        // A whole head longer than the limit is refused too
        let whole = "GET /" + String(repeating: "a", count: 200) + " HTTP/1.1\r\n\r\n"
        #expect(Self.status(Self.parse(whole, limit: 100)) == 431)
        #expect(Self.status(Self.parse(whole, limit: whole.utf8.count)) == nil)
    }

    @Test func aHeadTrickledByteByByteIsFoundWhereTheWholeOneIs() {
        for text in ["GET / HTTP/1.1\r\nHost: x\r\n\r\nBODY", "\r\n\r\nGET / HTTP/1.1\nA: b\n\nnext", "GET / HTTP/1.0\r\n\r\n"] {
            let bytes = Array(text.utf8)
            let whole = HTTPHeadParser.parse(ArraySlice(bytes), limit: 1024)
            // As a connection calls it: after each byte, resuming 3 bytes before the last end searched
            var searched = 0
            var found: HTTPHeadParser.Verdict = .incomplete
            for count in 1...bytes.count where found == .incomplete {
                found = HTTPHeadParser.parse(ArraySlice(bytes[0..<count]), limit: 1024, resumeAt: searched)
                searched = max(0, count - 3)
            }
            #expect(found == whole && whole != .incomplete, "\(text.debugDescription)")
        }
    }

    @Test func tooManyFieldsAre431() {
        let fields = (0...HTTPHeadParser.maximumFields).map { "X-\($0): y\r\n" }.joined()
        #expect(Self.status(Self.parse("GET / HTTP/1.1\r\n" + fields + "\r\n")) == 431)
    }

    @Test(arguments: [
        ("GET /\r\n\r\n", 400),
        ("GET  / HTTP/1.1\r\n\r\n", 400),
        ("GET / HTTP/1.1 extra\r\n\r\n", 400),
        ("G@T / HTTP/1.1\r\n\r\n", 400),
        ("GET / HTTPS/1.1\r\n\r\n", 400),
        ("GET / HTTP/11\r\n\r\n", 400),
        ("GET / HTTP/2.0\r\n\r\n", 505),
        ("GET / HTTP/1.2\r\n\r\n", 505),
        ("GET / HTTP/1.1\r\nNoColon\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nName : value\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\n: value\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nA: b\r\n  folded\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nA: b\u{01}c\r\n\r\n", 400),
    ])
    func malformedHeadsAreRefused(text: String, status: Int) {
        #expect(Self.status(Self.parse(text)) == status, "\(text.debugDescription)")
    }

    @Test func contentLengthIsTheBodyAndConflictsAre400() throws {
        func framing(_ fields: String, version: String = "1.1") throws -> Result<HTTPRequestFraming, HTTPRefusal> {
            HTTPRequestFraming.of(try Self.head("POST / HTTP/\(version)\r\n\(fields)\r\n"))
        }
        #expect(try framing("").get().bodyLength == 0)
        #expect(try framing("Content-Length: 42\r\n").get().bodyLength == 42)
        // The same value twice (two fields or a list) is one length
        #expect(try framing("Content-Length: 7\r\nContent-Length: 7\r\n").get().bodyLength == 7)
        #expect(try framing("Content-Length: 7, 7\r\n").get().bodyLength == 7)
        // A number too large for Int is over every limit, not a crash
        #expect(try framing("Content-Length: 99999999999999999999999999\r\n").get().bodyLength == Int.max)
        for bad in [
            "Content-Length: 7\r\nContent-Length: 8\r\n", "Content-Length: 7, 8\r\n", "Content-Length: abc\r\n", "Content-Length: -1\r\n",
            "Content-Length: +5\r\n", "Content-Length:\r\n", "Content-Length: 1 2\r\n",
        ] {
            #expect(try framing(bad).refusalStatus == 400, "\(bad.debugDescription)")
        }
    }

    @Test func transferCodingsAndUnknownExpectationsAreRefused() throws {
        func status(_ fields: String) throws -> Int? {
            HTTPRequestFraming.of(try Self.head("POST / HTTP/1.1\r\n\(fields)\r\n")).refusalStatus
        }
        #expect(try status("Transfer-Encoding: chunked\r\n") == 411)
        #expect(try status("Transfer-Encoding: gzip, chunked\r\nContent-Length: 5\r\n") == 411)
        #expect(try status("Transfer-Encoding: gzip\r\n") == 501)
        #expect(try status("Expect: something-else\r\n") == 417)
        #expect(try status("Expect: 100-Continue\r\nContent-Length: 2000\r\n") == nil)
    }

    @Test func expectContinueCountsOnHTTP11Only() throws {
        let eleven = try HTTPRequestFraming.of(Self.head("POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2000\r\n\r\n")).get()
        #expect(eleven.expectsContinue && eleven.bodyLength == 2000)
        let ten = try HTTPRequestFraming.of(Self.head("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2000\r\n\r\n")).get()
        #expect(!ten.expectsContinue)
    }

    @Test func keepAliveIsHTTP11sDefaultAndHTTP10sOnRequest() throws {
        func keepAlive(_ version: String, _ fields: String = "") throws -> Bool {
            try HTTPRequestFraming.of(Self.head("GET / HTTP/\(version)\r\n\(fields)\r\n")).get().keepAlive
        }
        #expect(try keepAlive("1.1"))
        #expect(try !keepAlive("1.1", "Connection: close\r\n"))
        #expect(try !keepAlive("1.1", "Connection: Upgrade, Close\r\n"))
        #expect(try !keepAlive("1.0"))
        #expect(try keepAlive("1.0", "Connection: Keep-Alive\r\n"))
        #expect(HTTPRequestFraming.connectionHeader(keepAlive: true, minorVersion: 1) == nil)
        #expect(HTTPRequestFraming.connectionHeader(keepAlive: true, minorVersion: 0) == "keep-alive")
        #expect(HTTPRequestFraming.connectionHeader(keepAlive: false, minorVersion: 1) == "close")
    }

    @Test func responsesCarryTheirLengthAndConnectionFields() {
        let ok = HTTPResponse(status: 200, headers: [HTTPHeader(name: "Content-Type", value: "text/plain")], body: Data("hi".utf8))
        #expect(String(decoding: ok.serialized(connection: nil), as: UTF8.self) == "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi")
        let closing = String(decoding: ok.serialized(connection: "close"), as: UTF8.self)
        #expect(closing.contains("\r\nConnection: close\r\n\r\nhi"))
        // HEAD: the length of the body not sent
        let head = HTTPResponse(status: 200, announcedLength: 1234)
        #expect(String(decoding: head.serialized(connection: nil), as: UTF8.self) == "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n")
        // 204: no Content-Length at all
        #expect(!String(decoding: HTTPResponse(status: 204).serialized(connection: nil), as: UTF8.self).contains("Content-Length"))
        #expect(
            String(decoding: HTTPResponse.text(431, "too long").serialized(connection: "close"), as: UTF8.self).hasPrefix(
                "HTTP/1.1 431 Request Header Fields Too Large\r\n"))
    }
}

extension Result where Success == HTTPRequestFraming, Failure == HTTPRefusal {
    var refusalStatus: Int? {
        if case .failure(let refusal) = self { return refusal.status }
        return nil
    }
}
