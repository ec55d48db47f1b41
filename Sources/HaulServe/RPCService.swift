import Foundation
import Haul
@_exported import HaulRPC

/// aria2's JSON-RPC on Haul's queue: parses a request (or a batch), checks the token, dispatches
/// to the method and shapes the answer as aria2 does. Pure of any transport: the HTTP and
/// WebSocket server hands it bytes and gets bytes back, on the server's own threads (never a
/// download's).
package final class RPCService: Sendable {
    let queue: DownloadQueue
    let settings: ServeSettings
    private let endpoint: RPCEndpoint
    /// Called with a notification the service itself causes (a waiting download paused or
    /// removed has no transfer to report it).
    let notify: @Sendable (String, Int64) -> Void
    /// Called after `aria2.shutdown`'s answer is sent.
    let shutdown: @Sendable (_ force: Bool) -> Void

    /// The `--secret`, nil for none (the file route is then closed).
    var secret: String? { endpoint.secret }

    /// Methods that need no token (aria2's exceptions).
    static let open: Set<String> = ["system.listMethods", "system.listNotifications"]
    static let notifications = [
        "aria2.onDownloadStart", "aria2.onDownloadPause", "aria2.onDownloadStop", "aria2.onDownloadComplete", "aria2.onDownloadError",
        "aria2.onBtDownloadComplete",
    ]
    /// The largest request body taken (a batch of many addUri calls fits; anything bigger is refused).
    package static let maximumBodyBytes = 1 << 20

    package init(
        queue: DownloadQueue, settings: ServeSettings, secret: String?,
        notify: @escaping @Sendable (String, Int64) -> Void, shutdown: @escaping @Sendable (Bool) -> Void
    ) {
        self.queue = queue
        self.settings = settings
        endpoint = RPCEndpoint(secret: secret, openMethods: Self.open, maximumBodyBytes: Self.maximumBodyBytes)
        self.notify = notify
        self.shutdown = shutdown
    }

    /// The answer to one HTTP body or WebSocket message (nil when it held only JSON-RPC
    /// notifications, requests without an `id`, which get no answer), and whether it carried a
    /// valid token (when the server notifies only authenticated WebSockets, a socket that made
    /// such a call gets notifications). Parsing, tokens and batches are `RPCEndpoint`'s; the
    /// methods are here.
    package func handle(_ body: Data) -> (response: Data?, authenticated: Bool) {
        endpoint.handle(body) { method, params in self.dispatch(method, params) }
    }

    /// One authorised call (token removed) to its method.
    func dispatch(_ method: String, _ params: [JSONValue]) -> Result<JSONValue, RPCError> {
        guard let handler = Self.methods[method] else {
            if Self.unsupported.contains(method) {
                return .failure(RPCError("\(method) is not supported: haul downloads over HTTP and HTTPS only (no BitTorrent, Metalink or FTP)"))
            }
            return .failure(.noSuchMethod(method))
        }
        do {
            return .success(try handler(self, params))
        } catch let error as RPCError {
            return .failure(error)
        } catch let error as DownloadError {
            return .failure(RPCError(error.message))
        } catch {
            return .failure(RPCError("\(error)"))
        }
    }

    static func reply(id: JSONValue, _ result: Result<JSONValue, RPCError>) -> JSONValue {
        RPCEndpoint.reply(id: id, result)
    }
}

/// What `haul serve` runs with, that aria2's global options read and change.
package final class ServeSettings: Sendable {
    /// The directory every download goes into (or below).
    package let root: String
    package let concurrency: QueueConcurrency
    /// `max-overall-download-limit`: every download's limiter sits within it.
    package let overallLimit: RateLimiter
    package let sessionID: String

    package init(root: String, concurrency: QueueConcurrency, overallLimit: RateLimiter) {
        self.root = root
        self.concurrency = concurrency
        self.overallLimit = overallLimit
        sessionID = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    }
}
