import Foundation
import HaulRPC

/// What `haul serve` answers over HTTP: JSON-RPC by POST (and WebSocket) at `/jsonrpc`, the
/// dashboard's files by GET elsewhere, each request first judged by the `RequestPolicy`. The
/// routing is pure (no I/O): the server asks it on its event loop; the calls run on its workers.
struct RPCRoutes: HTTPServerHandler {
    let service: RPCService
    let policy: RequestPolicy
    let streams: StreamRoutes

    init(service: RPCService, policy: RequestPolicy) {
        self.service = service
        self.policy = policy
        streams = StreamRoutes(service: service, policy: policy)
    }

    static let rpcPath = "/jsonrpc"
    /// The dashboard's scripts and connections come from this server only, and no other page may
    /// frame it (clicks lured onto a framed dashboard would pause or remove downloads).
    static let securityPolicy = "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; frame-ancestors 'none'"

    func route(_ head: HTTPRequestHead) -> HTTPRoute {
        let origin = head.header("Origin")
        let refusal = policy.refusal(host: head.header("Host"), origin: origin)
        if StreamRoutes.handles(head.path) {
            // The same Origin and Host rules as /jsonrpc; the token is checked on the worker.
            if let refusal { return .answer(response(403, type: "text/plain; charset=utf-8", body: Data((refusal + "\n").utf8))) }
            return .stream
        }
        guard head.path == Self.rpcPath else {
            if let refusal { return .answer(response(403, type: "text/plain; charset=utf-8", body: Data(refusal.utf8))) }
            return .answer(page(head))
        }
        if let refusal { return .answer(errorResponse(403, RPCError(refusal))) }
        if WebSocketHandshake.isRequested(by: head) { return .webSocket }
        switch head.method {
        case "POST":
            let tooLarge = errorResponse(413, RPCError(code: -32600, "Request too large (over \(RPCService.maximumBodyBytes) bytes)"))
            return .read(limit: RPCService.maximumBodyBytes, tooLarge: tooLarge)
        case "OPTIONS":
            // A preflight from an allowed web UI.
            return .answer(response(204, type: "text/plain", origin: origin))
        default:
            return .answer(errorResponse(405, RPCError(code: -32600, "use POST (or a WebSocket) for /jsonrpc")))
        }
    }

    func respond(to head: HTTPRequestHead, body: Data) -> HTTPResponse {
        let origin = head.header("Origin")
        guard let answer = service.handle(body).response else {
            // Only JSON-RPC notifications: nothing to answer.
            return response(204, type: "application/json-rpc", origin: origin)
        }
        return response(200, type: "application/json-rpc", body: answer, origin: origin)
    }

    func stream(to head: HTTPRequestHead) -> HTTPStreamReply {
        streams.answer(head)
    }

    func message(_ payload: Data) -> WebSocketReply {
        let (answer, authenticated) = service.handle(payload)
        // A socket that made an authenticated call receives notifications from then on.
        return WebSocketReply(message: answer, authenticated: authenticated)
    }

    private func page(_ head: HTTPRequestHead) -> HTTPResponse {
        guard head.method == "GET" || head.method == "HEAD" else {
            return response(405, type: "text/plain; charset=utf-8", body: Data("method not allowed\n".utf8))
        }
        guard let file = Dashboard.file(at: head.path) else {
            return response(404, type: "text/plain; charset=utf-8", body: Data("not found\n".utf8))
        }
        if head.method == "HEAD" { return response(200, type: file.type, announcedLength: file.body.count) }
        return response(200, type: file.type, body: file.body)
    }

    private func errorResponse(_ status: Int, _ error: RPCError) -> HTTPResponse {
        response(status, type: "application/json-rpc", body: RPCService.reply(id: .null, .failure(error)).serialized())
    }

    /// The fields every answer carries, and CORS for an allowed origin.
    private func response(_ status: Int, type: String, body: Data = Data(), announcedLength: Int? = nil, origin: String? = nil) -> HTTPResponse {
        var headers = [
            HTTPHeader(name: "Content-Type", value: type), HTTPHeader(name: "Cache-Control", value: "no-store"),
            HTTPHeader(name: "X-Content-Type-Options", value: "nosniff"), HTTPHeader(name: "Content-Security-Policy", value: Self.securityPolicy),
            HTTPHeader(name: "X-Frame-Options", value: "DENY"),
        ]
        if let origin, policy.admitsCrossOrigin(origin) {
            headers += [
                HTTPHeader(name: "Access-Control-Allow-Origin", value: origin), HTTPHeader(name: "Access-Control-Allow-Headers", value: "Content-Type"),
                HTTPHeader(name: "Access-Control-Allow-Methods", value: "POST, OPTIONS"), HTTPHeader(name: "Vary", value: "Origin"),
            ]
        }
        return HTTPResponse(status: status, headers: headers, body: body, announcedLength: announcedLength)
    }
}
