import Foundation
import Haul

/// aria2's JSON-RPC on Haul's queue: parses a request (or a batch), checks the token, dispatches
/// to the method and shapes the answer as aria2 does. Pure of any transport: the HTTP and
/// WebSocket server hands it bytes and gets bytes back, on the server's own threads (never a
/// download's).
public final class RPCService: Sendable {
    let queue: DownloadQueue
    let settings: ServeSettings
    private let secret: String?
    /// Called with a notification the service itself causes (a waiting download paused or
    /// removed has no transfer to report it).
    let notify: @Sendable (String, Int64) -> Void
    /// Called after `aria2.shutdown`'s answer is sent.
    let shutdown: @Sendable (_ force: Bool) -> Void

    /// Methods that need no token (aria2's exceptions).
    static let open: Set<String> = ["system.listMethods", "system.listNotifications"]
    static let notifications = [
        "aria2.onDownloadStart", "aria2.onDownloadPause", "aria2.onDownloadStop", "aria2.onDownloadComplete", "aria2.onDownloadError",
        "aria2.onBtDownloadComplete",
    ]
    /// The largest request body taken (a batch of many addUri calls fits; anything bigger is refused).
    public static let maximumBodyBytes = 1 << 20

    public init(
        queue: DownloadQueue, settings: ServeSettings, secret: String?,
        notify: @escaping @Sendable (String, Int64) -> Void, shutdown: @escaping @Sendable (Bool) -> Void
    ) {
        self.queue = queue
        self.settings = settings
        self.secret = secret
        self.notify = notify
        self.shutdown = shutdown
    }

    /// The answer to one HTTP body or WebSocket message (nil when it held only JSON-RPC
    /// notifications, requests without an `id`, which get no answer), and whether it carried a
    /// valid token (when the server notifies only authenticated WebSockets, a socket that made
    /// such a call gets notifications; a client that only listens can authenticate its socket
    /// with one silent call).
    public func handle(_ body: Data) -> (response: Data?, authenticated: Bool) {
        guard body.count <= Self.maximumBodyBytes else {
            return (Self.reply(id: .null, .failure(RPCError(code: -32600, "Request too large"))).serialized(), false)
        }
        guard let request = JSONValue.parse(body) else {
            return (Self.reply(id: .null, .failure(.parse)).serialized(), false)
        }
        if case .array(let batch) = request {
            guard !batch.isEmpty else { return (Self.reply(id: .null, .failure(.invalidRequest)).serialized(), false) }
            var authenticated = false
            let replies = batch.compactMap { element -> JSONValue? in
                let (reply, ok) = handle(element)
                authenticated = authenticated || ok
                return reply
            }
            return (replies.isEmpty ? nil : JSONValue.array(replies).serialized(), authenticated)
        }
        let (reply, authenticated) = handle(request)
        return (reply?.serialized(), authenticated)
    }

    private func handle(_ request: JSONValue) -> (JSONValue?, Bool) {
        guard case .object(let fields) = request else { return (Self.reply(id: .null, .failure(.invalidRequest)), false) }
        let id = fields["id"] ?? .null
        let isNotification = fields["id"] == nil
        guard case .string(let method)? = fields["method"] else { return (Self.reply(id: id, .failure(.invalidRequest)), false) }
        let params: [JSONValue]
        switch fields["params"] {
        case nil, .null?: params = []
        case .array(let list)?: params = list
        default: return (isNotification ? nil : Self.reply(id: id, .failure(.invalidParams("params must be a list"))), false)
        }
        let (result, authenticated) = call(method, params)
        return (isNotification ? nil : Self.reply(id: id, result), authenticated)
    }

    /// One call: the token checked (and removed from the params), then the method.
    func call(_ method: String, _ params: [JSONValue]) -> (Result<JSONValue, RPCError>, Bool) {
        if method == "system.multicall" {
            return multicall(params)
        }
        var rest = params
        let given = Self.token(in: &rest)
        let authenticated: Bool
        if Self.open.contains(method) {
            authenticated = false
        } else {
            guard secret.map({ Self.equal(given, $0) }) ?? true else { return (.failure(.unauthorized), false) }
            authenticated = true
        }
        guard let handler = Self.methods[method] else {
            if Self.unsupported.contains(method) {
                return (
                    .failure(RPCError("\(method) is not supported: haul downloads over HTTP and HTTPS only (no BitTorrent, Metalink or FTP)")), authenticated
                )
            }
            return (.failure(.noSuchMethod(method)), authenticated)
        }
        do {
            return (.success(try handler(self, rest)), authenticated)
        } catch let error as RPCError {
            return (.failure(error), authenticated)
        } catch let error as DownloadError {
            return (.failure(RPCError(error.message)), authenticated)
        } catch {
            return (.failure(RPCError("\(error)")), authenticated)
        }
    }

    /// `system.multicall`: each call checked on its own; results as one-element lists, failures
    /// as `{code, message}`.
    private func multicall(_ params: [JSONValue]) -> (Result<JSONValue, RPCError>, Bool) {
        guard let calls = params.first?.array, params.count == 1 else {
            return (.failure(.invalidParams("system.multicall takes one list of {methodName, params}")), false)
        }
        var authenticated = false
        var results: [JSONValue] = []
        for entry in calls {
            guard case .string(let name)? = entry["methodName"], name != "system.multicall" else {
                results.append(RPCError.invalidParams("each call needs a methodName (and no nested multicall)").json)
                continue
            }
            let nested: [JSONValue]
            switch entry["params"] {
            case nil, .null?: nested = []
            case .array(let list)?: nested = list
            default:
                results.append(RPCError.invalidParams("params must be a list").json)
                continue
            }
            let (result, ok) = call(name, nested)
            authenticated = authenticated || ok
            switch result {
            case .success(let value): results.append([value])
            case .failure(let error): results.append(error.json)
            }
        }
        return (.success(.array(results)), authenticated)
    }

    /// Removes a leading `token:…` parameter and returns the secret it carried.
    static func token(in params: inout [JSONValue]) -> String? {
        guard case .string(let first)? = params.first, first.hasPrefix("token:") else { return nil }
        params.removeFirst()
        return String(first.dropFirst("token:".count))
    }

    /// Compares in time independent of where the strings differ.
    static func equal(_ given: String?, _ secret: String) -> Bool {
        guard let given else { return false }
        let a = Array(given.utf8)
        let b = Array(secret.utf8)
        var difference = a.count ^ b.count
        for index in 0..<max(a.count, b.count) {
            difference |= Int((index < a.count ? a[index] : 0) ^ (index < b.count ? b[index] : 0))
        }
        return difference == 0
    }

    static func reply(id: JSONValue, _ result: Result<JSONValue, RPCError>) -> JSONValue {
        switch result {
        case .success(let value): return ["jsonrpc": "2.0", "id": id, "result": value]
        case .failure(let error): return ["jsonrpc": "2.0", "id": id, "error": error.json]
        }
    }
}

/// What `haul serve` runs with, that aria2's global options read and change.
public final class ServeSettings: Sendable {
    /// The directory every download goes into (or below).
    public let root: String
    public let concurrency: QueueConcurrency
    /// `max-overall-download-limit`: every download's limiter sits within it.
    public let overallLimit: RateLimiter
    public let sessionID: String

    public init(root: String, concurrency: QueueConcurrency, overallLimit: RateLimiter) {
        self.root = root
        self.concurrency = concurrency
        self.overallLimit = overallLimit
        sessionID = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    }
}
