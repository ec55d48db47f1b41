import CCivetweb
import Foundation
import HaulRPC

/// The HTTP and WebSocket side of `haul serve`, on civetweb: JSON-RPC by POST and by WebSocket at
/// `/jsonrpc`, the dashboard at `/`. Requests run on civetweb's own threads, never a download's.
///
/// A browser may reach a local server from any page, so: a request with an `Origin` must come
/// from this server's own origin (or one given with `--allow-origin`), and while the server
/// listens on loopback its `Host` must be a loopback name (a DNS-rebinding page sends its own).
///
/// `@unchecked Sendable`: `context` is set once in `init` and cleared once in `stop()`.
public final class RPCServer: @unchecked Sendable {
    let service: RPCService
    let clients = WebSocketClients()
    let policy: RequestPolicy
    private var context: OpaquePointer?
    /// The port it listens on (the one chosen by the system when asked for 0).
    public private(set) var port: Int = 0

    public init(service: RPCService, host: String, port: Int, allowedOrigins: [String]) throws(ServeError) {
        self.service = service
        policy = RequestPolicy(loopbackOnly: RequestPolicy.isLoopbackName(host), allowedOrigins: Set(allowedOrigins))
        _ = mg_init_library(0)
        let options = [
            "listening_ports", "\(host):\(port)",
            "num_threads", "16",
            "enable_keep_alive", "yes",
            "request_timeout_ms", "10000",
            "websocket_timeout_ms", "3600000",
        ]
        let cStrings: [UnsafeMutablePointer<CChar>?] = options.map { strdup($0) }
        defer { for pointer in cStrings { free(pointer) } }
        var arguments: [UnsafePointer<CChar>?] = cStrings.map { $0.map { UnsafePointer($0) } } + [nil]
        var callbacks = mg_callbacks()
        let started = mg_start(&callbacks, nil, &arguments)
        guard let started else {
            throw ServeError("cannot listen on \(host):\(port) (in use, or not an address of this machine)")
        }
        context = started
        var ports = [mg_server_port](repeating: mg_server_port(), count: 4)
        let count = mg_get_server_ports(started, Int32(ports.count), &ports)
        self.port = count > 0 ? Int(ports[0].port) : port
        let me = Unmanaged.passUnretained(self).toOpaque()
        mg_set_request_handler(started, "/jsonrpc", rpcRequestHandler, me)
        mg_set_request_handler(started, "/", pageRequestHandler, me)
        mg_set_websocket_handler(started, "/jsonrpc", socketConnectHandler, socketReadyHandler, socketDataHandler, socketCloseHandler, me)
    }

    /// Stops listening and closes every connection (civetweb joins its threads).
    public func stop() {
        guard let context else { return }
        self.context = nil
        mg_stop(context)
    }

    /// Sends an aria2 notification to every WebSocket client that made an authenticated call.
    public func notify(_ method: String, gid: String) {
        let message: JSONValue = ["jsonrpc": "2.0", "method": .string(method), "params": [["gid": .string(gid)]]]
        clients.broadcast(message.serialized())
    }

    static func from(_ data: UnsafeMutableRawPointer?) -> RPCServer? {
        data.map { Unmanaged<RPCServer>.fromOpaque($0).takeUnretainedValue() }
    }
}

/// Why `haul serve` cannot start.
public struct ServeError: Error, Sendable, Equatable {
    public let message: String
    public init(_ message: String) { self.message = message }
}

// MARK: civetweb callbacks (C function pointers: no captures; the server comes in `cbdata`)

private let rpcRequestHandler: mg_request_handler = { connection, data in
    guard let connection, let server = RPCServer.from(data) else { return 0 }
    return server.handleRPC(connection)
}

private let pageRequestHandler: mg_request_handler = { connection, data in
    guard let connection, let server = RPCServer.from(data) else { return 0 }
    return server.handlePage(connection)
}

private let socketConnectHandler: mg_websocket_connect_handler = { connection, data in
    guard let connection, let server = RPCServer.from(data) else { return 1 }
    let request = HTTPRequestView(connection)
    // Non-zero refuses the upgrade.
    return server.policy.refusal(host: request.header("Host"), origin: request.header("Origin")) == nil ? 0 : 1
}

private let socketReadyHandler: mg_websocket_ready_handler = { connection, data in
    guard let connection, let server = RPCServer.from(data) else { return }
    let client = WebSocketClient(connection: connection)
    server.clients.add(client, for: connection)
    client.start()
}

private let socketDataHandler: mg_websocket_data_handler = { connection, bits, bytes, length, data in
    guard let connection, let server = RPCServer.from(data) else { return 0 }
    let opcode = bits & 0x0f
    switch opcode {
    case Int32(MG_WEBSOCKET_OPCODE_CONNECTION_CLOSE):
        return 0
    case Int32(MG_WEBSOCKET_OPCODE_TEXT), Int32(MG_WEBSOCKET_OPCODE_BINARY):
        guard let client = server.clients.client(for: connection) else { return 0 }
        let body = bytes.map { Data(bytes: $0, count: length) } ?? Data()
        let (response, authenticated) = server.service.handle(body)
        if authenticated { client.markAuthenticated() }
        if let response { client.send(response, isNotification: false) }
        return 1
    default:
        return 1
    }
}

private let socketCloseHandler: mg_websocket_close_handler = { connection, data in
    guard let connection, let server = RPCServer.from(data) else { return }
    server.clients.remove(connection)?.close()
}
