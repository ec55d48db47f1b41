import Foundation

/// The opening handshake of RFC 6455 (section 4.2), server side. Pure.
enum WebSocketHandshake {
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// Whether `head` asks for a WebSocket at all (`Upgrade: websocket`); such a request is
    /// handed to `check` rather than answered as a page.
    static func isRequested(by head: HTTPRequestHead) -> Bool {
        head.lists("websocket", in: "Upgrade")
    }

    /// The client's key when `head` is a valid opening handshake, or why not: not a GET, no
    /// `Upgrade: websocket` or `Connection: upgrade`, no key (400); another version (426, with the
    /// version served in `Sec-WebSocket-Version`).
    static func check(_ head: HTTPRequestHead) -> Result<String, HTTPRefusal> {
        guard head.method == "GET", head.minorVersion >= 1 else {
            return .failure(HTTPRefusal(400, "a WebSocket handshake is a GET on HTTP/1.1"))
        }
        guard isRequested(by: head), head.lists("upgrade", in: "Connection") else {
            return .failure(HTTPRefusal(400, "a WebSocket handshake needs Upgrade: websocket and Connection: Upgrade"))
        }
        guard head.header("Sec-WebSocket-Version")?.trimmingHTTPWhitespace() == "13" else {
            return .failure(HTTPRefusal(426, "only WebSocket version 13 is served"))
        }
        guard let key = head.header("Sec-WebSocket-Key").map({ String($0.trimmingHTTPWhitespace()) }),
            let decoded = Data(base64Encoded: key), decoded.count == 16
        else {
            return .failure(HTTPRefusal(400, "a WebSocket handshake needs a Sec-WebSocket-Key of 16 bytes in base64"))
        }
        return .success(key)
    }

    /// `Sec-WebSocket-Accept` for `key`: base64(SHA-1(key + the RFC's GUID)).
    static func acceptValue(for key: String) -> String {
        Data(SHA1.digest(Array((key + guid).utf8))).base64EncodedString()
    }

    /// The `101 Switching Protocols` answer to a handshake with `key`.
    static func response(for key: String) -> Data {
        Data(
            ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Accept: \(acceptValue(for: key))\r\n\r\n").utf8)
    }

    /// A refusal's answer: 426 tells the client the version served.
    static func refusalResponse(_ refusal: HTTPRefusal) -> HTTPResponse {
        let base = HTTPResponse.text(refusal.status, refusal.reason)
        guard refusal.status == 426 else { return base }
        return HTTPResponse(status: 426, headers: base.headers + [HTTPHeader(name: "Sec-WebSocket-Version", value: "13")], body: base.body)
    }
}
