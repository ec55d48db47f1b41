import HaulCore
import Testing

@testable import HaulEngine

/// A handler that keeps the head it is given.
final class HeadRecorder: TransferHandler {
    var head: ResponseHead?
    func transferDidReceiveHead(_ head: ResponseHead) -> TransferControl {
        self.head = head
        return .proceed
    }
    func transferDidReceiveBody(_ chunk: UnsafeRawBufferPointer) -> TransferControl { .proceed }
    func transferShouldAbort() -> Bool { false }
}

@Suite("Response head parsing in the libcurl callbacks (no network)")
struct HeaderParsingTests {
    func parse(_ lines: [String]) -> (ResponseHead?, CurlCallContext) {
        let recorder = HeadRecorder()
        let context = CurlCallContext(handler: recorder, stallTimeout: nil)
        for line in lines {
            let bytes = Array(line.utf8)
            _ = bytes.withUnsafeBytes { context.receiveHeaderLine($0) }
        }
        return (recorder.head, context)
    }

    @Test func statusFieldsAndWhitespace() throws {
        // GIVEN a head with CRLF endings, optional whitespace and a folded line
        let (head, _) = parse([
            "HTTP/1.1 206 Partial Content\r\n",
            "Content-Range:   bytes 0-9/100 \t\r\n",
            "ETag: \"v1\"\r\n",
            "X-Long: first\r\n",
            "\t second\r\n",
            "\r\n",
        ])
        let parsed = try #require(head)
        #expect(parsed.status == 206)
        #expect(parsed.headers["content-range"] == "bytes 0-9/100")
        #expect(parsed.headers["ETag"] == "\"v1\"")
        #expect(parsed.headers["X-Long"] == "first second")
    }

    @Test func informationalHeadsAreSkipped() throws {
        let (head, _) = parse(["HTTP/1.1 100 Continue\r\n", "\r\n", "HTTP/2 200\r\n", "Content-Length: 5\r\n", "\r\n"])
        #expect(try #require(head).status == 200)
        #expect(head?.contentLength == 5)
    }

    @Test func aColonFusedWithACombiningMarkStillSplitsTheField() throws {
        // ":" followed by U+0301 is one Character; the parser works on bytes
        let (head, _) = parse(["HTTP/1.1 200 OK\r\n", "X-Name:\u{301}value\r\n", "\r\n"])
        #expect(try #require(head).headers["X-Name"] == "\u{301}value")
    }

    @Test func tooManyFieldsAreRefused() {
        let lines = ["HTTP/1.1 200 OK\r\n"] + (0..<300).map { "X-\($0): v\r\n" } + ["\r\n"]
        let (head, context) = parse(lines)
        #expect(head == nil)
        #expect(context.failure?.kind == .headerTooLarge)
    }

    @Test func statusCodes() {
        func code(_ text: String) -> Int {
            let bytes = Array(text.utf8)
            return bytes.withUnsafeBytes { CurlCallContext.statusCode($0[0..<$0.count]) }
        }
        #expect(code("HTTP/1.1 404 Not Found") == 404)
        #expect(code("HTTP/2 200") == 200)
        #expect(code("HTTP/1.1 20") == 0)
        #expect(code("HTTP/1.1") == 0)
    }
}
