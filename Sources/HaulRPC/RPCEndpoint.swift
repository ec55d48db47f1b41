import Foundation

/// The JSON-RPC 2.0 envelope as aria2 speaks it, pure of any method: a body (one request or a
/// batch) in, the answer out. It parses (bounded, see `JSONParser`), checks each call's
/// `token:` parameter in constant time, expands `system.multicall`, leaves requests without an
/// `id` unanswered (JSON-RPC notifications), and hands each authorised call, token removed, to
/// `dispatch`. A body it cannot read gets an error answer; nothing it is sent makes it trap.
public struct RPCEndpoint: Sendable {
    /// The `--secret`; nil takes every call (aria2 without `--rpc-secret`).
    public let secret: String?
    /// Methods that need no token (aria2's `system.listMethods`, `system.listNotifications`).
    public let openMethods: Set<String>
    /// The largest body read; a larger one is refused.
    public let maximumBodyBytes: Int

    public typealias Dispatch = (_ method: String, _ params: [JSONValue]) -> Result<JSONValue, RPCError>

    public init(secret: String?, openMethods: Set<String>, maximumBodyBytes: Int) {
        self.secret = secret
        self.openMethods = openMethods
        self.maximumBodyBytes = maximumBodyBytes
    }

    /// The answer to one HTTP body or WebSocket message (nil when it held only requests without
    /// an `id`), and whether it carried a valid token.
    public func handle(_ body: Data, dispatch: Dispatch) -> (response: Data?, authenticated: Bool) {
        guard body.count <= maximumBodyBytes else {
            return (Self.reply(id: .null, .failure(RPCError(code: -32600, "Request too large"))).serialized(), false)
        }
        let request: JSONValue
        do throws(JSONParseError) {
            request = try JSONParser.parse(body)
        } catch .tooDeep {
            let error = RPCError(code: -32600, "Invalid Request: nested deeper than \(JSONParser.maximumDepth) levels")
            return (Self.reply(id: .null, .failure(error)).serialized(), false)
        } catch {
            return (Self.reply(id: .null, .failure(.parse)).serialized(), false)
        }
        if case .array(let batch) = request {
            guard !batch.isEmpty else { return (Self.reply(id: .null, .failure(.invalidRequest)).serialized(), false) }
            var authenticated = false
            let replies = batch.compactMap { element -> JSONValue? in
                let (reply, ok) = handle(request: element, dispatch)
                authenticated = authenticated || ok
                return reply
            }
            return (replies.isEmpty ? nil : JSONValue.array(replies).serialized(), authenticated)
        }
        let (reply, authenticated) = handle(request: request, dispatch)
        return (reply?.serialized(), authenticated)
    }

    private func handle(request: JSONValue, _ dispatch: Dispatch) -> (JSONValue?, Bool) {
        guard case .object(let fields) = request else { return (Self.reply(id: .null, .failure(.invalidRequest)), false) }
        // An id is a string, a number or null (JSON-RPC 2.0); anything else is not echoed back.
        let id: JSONValue
        switch fields["id"] {
        case nil, .null?: id = .null
        case .string?, .int?, .double?: id = fields["id"] ?? .null
        default: return (Self.reply(id: .null, .failure(.invalidRequest)), false)
        }
        let isNotification = fields["id"] == nil
        guard case .string(let method)? = fields["method"] else { return (Self.reply(id: id, .failure(.invalidRequest)), false) }
        let params: [JSONValue]
        switch fields["params"] {
        case nil, .null?: params = []
        case .array(let list)?: params = list
        default: return (isNotification ? nil : Self.reply(id: id, .failure(.invalidParams("params must be a list"))), false)
        }
        let (result, authenticated) = call(method, params, dispatch)
        return (isNotification ? nil : Self.reply(id: id, result), authenticated)
    }

    /// One call: the token checked (and removed from the params), then the method.
    public func call(_ method: String, _ params: [JSONValue], _ dispatch: Dispatch) -> (Result<JSONValue, RPCError>, Bool) {
        if method == "system.multicall" {
            return multicall(params, dispatch)
        }
        var rest = params
        let given = Self.token(in: &rest)
        let authenticated: Bool
        if openMethods.contains(method) {
            authenticated = false
        } else {
            guard secret.map({ Self.equal(given, $0) }) ?? true else { return (.failure(.unauthorized), false) }
            authenticated = true
        }
        return (dispatch(method, rest), authenticated)
    }

    /// `system.multicall`: each call checked on its own; results as one-element lists, failures
    /// as `{code, message}`.
    private func multicall(_ params: [JSONValue], _ dispatch: Dispatch) -> (Result<JSONValue, RPCError>, Bool) {
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
            let (result, ok) = call(name, nested, dispatch)
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

    /// A reply object.
    public static func reply(id: JSONValue, _ result: Result<JSONValue, RPCError>) -> JSONValue {
        switch result {
        case .success(let value): return ["jsonrpc": "2.0", "id": id, "result": value]
        case .failure(let error): return ["jsonrpc": "2.0", "id": id, "error": error.json]
        }
    }
}
