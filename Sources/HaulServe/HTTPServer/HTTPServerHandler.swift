import Foundation

/// What the server does with a request, decided from its head alone.
enum HTTPRoute: Sendable, Equatable {
    /// Send this answer without reading any body (a body that was announced is not read, and
    /// the connection closes after the answer).
    case answer(HTTPResponse)
    /// Read the body, at most `limit` bytes, and pass the request to `respond(to:body:)` on a
    /// worker; a longer one gets `tooLarge` at once, unread.
    case read(limit: Int, tooLarge: HTTPResponse)
    /// Accept a WebSocket handshake (the server checks it, and answers 400, 426 or 503 itself).
    case webSocket
    /// A request without a body whose answer may be long (a file, an event stream): a worker asks
    /// `stream(to:)` what to send, and the loop sends it as the socket drains, holding no worker.
    case stream
}

/// What a WebSocket message handler returned.
struct WebSocketReply: Sendable, Equatable {
    /// The text message to send back, if any.
    let message: Data?
    /// Whether the message carried a valid token: the socket receives broadcasts from now on (it
    /// stays subscribed once it is), and is kept over sockets that never did when the server
    /// makes room for new clients.
    let authenticated: Bool
}

/// The application behind an `HTTPServer`.
protocol HTTPServerHandler: Sendable {
    /// Called on the event loop for every request head: must be quick and never block.
    func route(_ head: HTTPRequestHead) -> HTTPRoute
    /// A request routed `.read`, with its body. Runs on a worker; may take its time.
    func respond(to head: HTTPRequestHead, body: Data) -> HTTPResponse
    /// One message of a WebSocket. Runs on a worker, one message of a socket at a time.
    func message(_ payload: Data) -> WebSocketReply
    /// A request routed `.stream`. Runs on a worker, which is free again once it returned.
    func stream(to head: HTTPRequestHead) -> HTTPStreamReply
}

extension HTTPServerHandler {
    func stream(to head: HTTPRequestHead) -> HTTPStreamReply {
        .whole(HTTPResponse.text(404, "not found"))
    }
}
