import Foundation
import HaulRPC

/// The HTTP and WebSocket side of `haul serve`: JSON-RPC by POST and by WebSocket at `/jsonrpc`,
/// the dashboard at `/`, on Haul's own `HTTPServer` (one event loop, a few workers). Calls run on
/// the server's workers, never a download's thread.
///
/// A browser may reach a local server from any page, so: a request with an `Origin` must come
/// from this server's own origin (or one given with `--allow-origin`), and while the server
/// listens on loopback its `Host` must be a loopback name (a DNS-rebinding page sends its own).
/// A WebSocket handshake goes through the same rules.
package final class RPCServer: Sendable {
    let service: RPCService
    let policy: RequestPolicy
    private let server: HTTPServer

    /// The port it listens on (the one chosen by the system when asked for 0).
    package var port: Int { server.port }

    /// Listens on `host` (an address or a name) and `port` (0: the system picks).
    /// `notifyUnauthenticated`: notifications go to every WebSocket (as aria2 sends them: a
    /// listener such as aria2p's opens a socket and never calls); false sends them only to
    /// sockets that made an authenticated call.
    package convenience init(service: RPCService, host: String, port: Int, allowedOrigins: [String], notifyUnauthenticated: Bool = true)
        throws(ServeError)
    {
        try self.init(
            service: service, host: host, port: port, allowedOrigins: allowedOrigins, notifyUnauthenticated: notifyUnauthenticated,
            limits: HTTPServerLimits())
    }

    init(service: RPCService, host: String, port: Int, allowedOrigins: [String], notifyUnauthenticated: Bool, limits: HTTPServerLimits)
        throws(ServeError)
    {
        self.service = service
        policy = RequestPolicy(loopbackOnly: RequestPolicy.isLoopbackName(host), allowedOrigins: Set(allowedOrigins))
        server = try HTTPServer(
            host: host, port: port, limits: limits, subscribeNewSockets: notifyUnauthenticated, handler: RPCRoutes(service: service, policy: policy))
    }

    /// Stops listening and closes every connection, once the calls under way returned.
    package func stop() {
        server.stop()
    }

    /// Sends an aria2 notification to every WebSocket that receives them. Never waits for a
    /// client: one far behind misses it.
    package func notify(_ method: String, gid: String) {
        server.broadcast(Self.notification(method, gid: gid))
    }

    /// Sends `event` to every open event stream (`/haul/events`). Never waits.
    func publish(_ event: StreamEvent) {
        server.publish(event)
    }

    /// `{"jsonrpc":"2.0","method":…,"params":[{"gid":…}]}` as `JSONValue.serialized()` writes it,
    /// but filled into a template: a busy queue sends thousands, and building the tree would be
    /// most of their cost on the sender's thread. The strings go through the one JSON writer.
    static func notification(_ method: String, gid: String) -> Data {
        Data(#"{"jsonrpc":"2.0","method":\#(JSONWriter.quoted(method)),"params":[{"gid":\#(JSONWriter.quoted(gid))}]}"#.utf8)
    }
}
