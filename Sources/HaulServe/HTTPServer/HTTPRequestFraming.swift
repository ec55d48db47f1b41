/// What a request head says about the bytes after it and about the connection: how long the body
/// is, whether the client waits for `100 Continue` before sending it, and whether the connection
/// stays open after the response. Pure.
struct HTTPRequestFraming: Sendable, Equatable {
    /// The body's length from `Content-Length` (0 without one); `Int.max` for a number too large to
    /// hold, which every limit refuses.
    let bodyLength: Int
    /// `Expect: 100-continue` on HTTP/1.1: the client waits (a while) for `100 Continue` first.
    let expectsContinue: Bool
    /// HTTP/1.1 keeps the connection unless `Connection: close`; HTTP/1.0 closes it unless
    /// `Connection: keep-alive`.
    let keepAlive: Bool

    /// The framing of `head`, or why it is refused: a chunked body (411: send a length), another
    /// transfer coding (501), a malformed or conflicting `Content-Length` (400), an expectation
    /// other than `100-continue` (417).
    static func of(_ head: HTTPRequestHead) -> Result<HTTPRequestFraming, HTTPRefusal> {
        let codings = head.values("Transfer-Encoding")
        if !codings.isEmpty {
            if head.lists("chunked", in: "Transfer-Encoding") {
                return .failure(HTTPRefusal(411, "chunked request bodies are not accepted: send Content-Length"))
            }
            return .failure(HTTPRefusal(501, "Transfer-Encoding \(codings.joined(separator: ", ")) is not supported"))
        }
        var length: Int?
        for value in head.values("Content-Length") {
            for item in value.split(separator: ",", omittingEmptySubsequences: false) {
                guard let parsed = parseLength(item.trimmingHTTPWhitespace()) else {
                    return .failure(HTTPRefusal(400, "malformed Content-Length"))
                }
                if let length, length != parsed { return .failure(HTTPRefusal(400, "conflicting Content-Length values")) }
                length = parsed
            }
        }
        var expectsContinue = false
        if let expectation = head.header("Expect") {
            guard expectation.trimmingHTTPWhitespace().caseInsensitiveEquals("100-continue") else {
                return .failure(HTTPRefusal(417, "only Expect: 100-continue is understood"))
            }
            expectsContinue = head.minorVersion >= 1
        }
        let keepAlive = head.minorVersion >= 1 ? !head.lists("close", in: "Connection") : head.lists("keep-alive", in: "Connection")
        return .success(HTTPRequestFraming(bodyLength: length ?? 0, expectsContinue: expectsContinue, keepAlive: keepAlive))
    }

    /// Decimal digits only; a number beyond `Int` is `Int.max`.
    private static func parseLength(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int(text) ?? Int.max
    }
}

extension HTTPRequestFraming {
    /// The `Connection` field of the response: `close` when the server closes after it,
    /// `keep-alive` for an HTTP/1.0 client it keeps, none otherwise (HTTP/1.1 keeps by default).
    static func connectionHeader(keepAlive: Bool, minorVersion: Int) -> String? {
        keepAlive ? (minorVersion == 0 ? "keep-alive" : nil) : "close"
    }
}
