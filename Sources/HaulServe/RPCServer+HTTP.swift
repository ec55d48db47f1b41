import CCivetweb
import Foundation
import HaulRPC

/// Answers to plain HTTP requests: JSON-RPC by POST, the dashboard's files by GET.
extension RPCServer {
    func handleRPC(_ connection: OpaquePointer) -> Int32 {
        let request = HTTPRequestView(connection)
        if let refusal = policy.refusal(host: request.header("Host"), origin: request.header("Origin")) {
            return respondError(connection, status: 403, RPCError(refusal))
        }
        switch request.method {
        case "POST":
            break
        case "OPTIONS":
            // A preflight from an allowed web UI.
            return respond(connection, status: 204, type: "text/plain", body: Data(), origin: request.header("Origin"))
        default:
            return respondError(connection, status: 405, RPCError(code: -32600, "use POST (or a WebSocket) for /jsonrpc"))
        }
        guard let body = request.body(limit: RPCService.maximumBodyBytes) else {
            return respondError(connection, status: 413, RPCError(code: -32600, "Request too large (over \(RPCService.maximumBodyBytes) bytes)"))
        }
        let (response, _) = service.handle(body)
        guard let response else {
            // Only JSON-RPC notifications: nothing to answer.
            return respond(connection, status: 204, type: "application/json-rpc", body: Data(), origin: request.header("Origin"))
        }
        return respond(connection, status: 200, type: "application/json-rpc", body: response, origin: request.header("Origin"))
    }

    func handlePage(_ connection: OpaquePointer) -> Int32 {
        let request = HTTPRequestView(connection)
        if let refusal = policy.refusal(host: request.header("Host"), origin: request.header("Origin")) {
            return respond(connection, status: 403, type: "text/plain; charset=utf-8", body: Data(refusal.utf8))
        }
        guard request.method == "GET" || request.method == "HEAD" else {
            return respond(connection, status: 405, type: "text/plain; charset=utf-8", body: Data("method not allowed\n".utf8))
        }
        guard let file = Dashboard.file(at: request.path) else {
            return respond(connection, status: 404, type: "text/plain; charset=utf-8", body: Data("not found\n".utf8))
        }
        return respond(connection, status: 200, type: file.type, body: request.method == "HEAD" ? Data() : file.body, length: file.body.count)
    }

    private func respondError(_ connection: OpaquePointer, status: Int, _ error: RPCError) -> Int32 {
        let body = RPCService.reply(id: .null, .failure(error)).serialized()
        return respond(connection, status: status, type: "application/json-rpc", body: body)
    }

    private func respond(_ connection: OpaquePointer, status: Int, type: String, body: Data, length: Int? = nil, origin: String? = nil) -> Int32 {
        var head = "HTTP/1.1 \(status) \(Self.reason(status))\r\n"
        head += "Content-Type: \(type)\r\nContent-Length: \(length ?? body.count)\r\n"
        head += "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
        head += "Content-Security-Policy: default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:\r\n"
        if let origin, policy.allowedOrigins.contains(origin) || policy.allowedOrigins.contains("*") {
            head += "Access-Control-Allow-Origin: \(origin)\r\nAccess-Control-Allow-Headers: Content-Type\r\n"
            head += "Access-Control-Allow-Methods: POST, OPTIONS\r\nVary: Origin\r\n"
        }
        head += "\r\n"
        var bytes = Data(head.utf8)
        bytes.append(body)
        _ = bytes.withUnsafeBytes { mg_write(connection, $0.baseAddress, $0.count) }
        return Int32(status)
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 204: return "No Content"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 413: return "Payload Too Large"
        default: return "Error"
        }
    }
}

/// Read-only access to civetweb's view of a request.
struct HTTPRequestView {
    let connection: OpaquePointer

    init(_ connection: OpaquePointer) {
        self.connection = connection
    }

    var method: String {
        mg_get_request_info(connection)?.pointee.request_method.map { String(cString: $0) } ?? ""
    }

    var path: String {
        mg_get_request_info(connection)?.pointee.local_uri.map { String(cString: $0) } ?? "/"
    }

    func header(_ name: String) -> String? {
        mg_get_header(connection, name).map { String(cString: $0) }
    }

    /// The body, or nil when it is longer than `limit` bytes (nothing more is read then).
    func body(limit: Int) -> Data? {
        if let info = mg_get_request_info(connection), info.pointee.content_length > Int64(limit) { return nil }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { mg_read(connection, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            data.append(contentsOf: buffer[0..<Int(count)])
            if data.count > limit { return nil }
        }
        return data
    }
}
