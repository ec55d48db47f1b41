import Foundation

/// The JSON-RPC 2.0 envelope as aria2 speaks it, pure of any method: a body (one request or a
/// batch) in, the answer out. It parses (bounded, see `JSONParser`), checks each call's
/// `token:` parameter in constant time, expands `system.multicall`, leaves requests without an
/// `id` unanswered (JSON-RPC notifications), and hands each authorised call, token removed, to
/// `dispatch`. A body it cannot read gets an error answer; nothing it is sent makes it trap.
///
/// What one message may make the server do is bounded before anything runs, and what it may
/// make it answer as the answer is built (aria2 bounds neither):
/// - at most `maximumCalls` calls, batch entries and `system.multicall` entries together, and
///   `maximumCalls * valuesPerCall` JSON values in all; a message over either gets one error
///   and nothing of it runs;
/// - at most `maximumAnswerBytes` of answers: a call whose answer would pass that gets an error
///   in its place, and the calls after it are not run (each gets an error saying so);
/// - at most `maximumMessageSeconds` of work: no call is started past it (the rest are not run).
package struct RPCEndpoint: Sendable {
    /// The `--secret`; nil takes every call (aria2 without `--rpc-secret`).
    package let secret: String?
    /// Methods that need no token (aria2's `system.listMethods`, `system.listNotifications`).
    package let openMethods: Set<String>
    /// The largest body read; a larger one is refused.
    package let maximumBodyBytes: Int
    /// The most calls one message may hold.
    package let maximumCalls: Int
    /// The most bytes of answers one message may get.
    package let maximumAnswerBytes: Int
    /// The most time the calls of one message may take, from the first: a call is not started
    /// past it (one call already running is not cut). It bounds how long a message holds a
    /// worker, and so how long other clients wait behind a batch of slow calls, and a stop.
    package let maximumMessageSeconds: Double

    /// JSON values allowed per call, on average over the message: an `addUri` with a few options
    /// takes about 15 (a single call may take the whole message's allowance). It bounds the
    /// parsed tree, which takes tens of bytes for each byte of a body of small values.
    package static let valuesPerCall = 32
    /// 1,000 calls: a web UI's multicall over a page of downloads takes a few hundred at most.
    package static let defaultMaximumCalls = 1000
    /// 8 MiB: `tellStopped` of 5,000 downloads with every field takes about 4.
    package static let defaultMaximumAnswerBytes = 8 << 20
    /// 1 s: a web UI's multicall of a few hundred calls takes milliseconds.
    package static let defaultMaximumMessageSeconds = 1.0

    package typealias Dispatch = (_ method: String, _ params: [JSONValue]) -> Result<JSONValue, RPCError>

    package init(
        secret: String?, openMethods: Set<String>, maximumBodyBytes: Int, maximumCalls: Int = defaultMaximumCalls,
        maximumAnswerBytes: Int = defaultMaximumAnswerBytes, maximumMessageSeconds: Double = defaultMaximumMessageSeconds
    ) {
        self.secret = secret
        self.openMethods = openMethods
        self.maximumBodyBytes = maximumBodyBytes
        self.maximumCalls = max(1, maximumCalls)
        self.maximumAnswerBytes = max(1024, maximumAnswerBytes)
        self.maximumMessageSeconds = max(0.01, maximumMessageSeconds)
    }

    /// What is left of one message's budget: bytes of answers, and time for its calls.
    struct AnswerBudget {
        /// Why the calls still to come are not run.
        enum Stop {
            case answers
            case time
        }

        let limit: Int
        let seconds: Double
        private let deadline: ContinuousClock.Instant
        private(set) var spent = 0
        private(set) var stopped: Stop?

        init(limit: Int, seconds: Double) {
            self.limit = limit
            self.seconds = seconds
            deadline = .now + .seconds(seconds)
        }

        /// Whether the next call may run: the answers so far fit, and the message's time is not up.
        mutating func mayRunNext() -> Bool {
            if stopped == nil, ContinuousClock.now >= deadline { stopped = .time }
            return stopped == nil
        }

        /// Counts an answer of `bytes`; false (and no more calls run) when it does not fit.
        mutating func spend(_ bytes: Int) -> Bool {
            guard stopped != .answers, bytes <= limit - spent else {
                stopped = .answers
                return false
            }
            spent += bytes
            return true
        }

        var tooLarge: RPCError {
            RPCError(
                "the answer to this call would pass the \(limit) bytes one message may be answered with; "
                    + "ask for less (offset and num, keys) or send fewer calls per message")
        }

        var notRun: RPCError {
            switch stopped {
            case .time?:
                return RPCError("not run: the calls of this message took more than the \(seconds) s one message may take; send fewer calls per message")
            case .answers?, nil:
                return RPCError("not run: the answers to this message passed the \(limit) bytes one message may be answered with; send fewer calls per message")
            }
        }
    }

    /// The answer to one HTTP body or WebSocket message (nil when it held only requests without
    /// an `id`), and whether it carried a valid token.
    package func handle(_ body: Data, dispatch: Dispatch) -> (response: Data?, authenticated: Bool) {
        guard body.count <= maximumBodyBytes else {
            return (Self.reply(id: .null, .failure(RPCError(code: -32600, "Request too large"))).serialized(), false)
        }
        let request: JSONValue
        do throws(JSONParseError) {
            request = try JSONParser.parse(body, maximumValues: maximumCalls * Self.valuesPerCall)
        } catch .tooDeep {
            let error = RPCError(code: -32600, "Invalid Request: nested deeper than \(JSONParser.maximumDepth) levels")
            return (Self.reply(id: .null, .failure(error)).serialized(), false)
        } catch .tooManyValues(let limit) {
            let error = RPCError(code: -32600, "Invalid Request: more than \(limit) JSON values in one message; send fewer calls per message")
            return (Self.reply(id: .null, .failure(error)).serialized(), false)
        } catch {
            return (Self.reply(id: .null, .failure(.parse)).serialized(), false)
        }
        let calls = Self.callCount(request)
        guard calls <= maximumCalls else {
            let error = RPCError(
                code: -32600, "Invalid Request: \(calls) calls in one message, over the \(maximumCalls) allowed (batch and system.multicall entries together)")
            return (Self.reply(id: .null, .failure(error)).serialized(), false)
        }
        var budget = AnswerBudget(limit: maximumAnswerBytes, seconds: maximumMessageSeconds)
        guard case .array(let batch) = request else {
            let (reply, authenticated) = handle(request: request, dispatch, &budget)
            return (reply.map { answer($0, id: Self.id(of: request), counted: budget.spent, &budget) }, authenticated)
        }
        guard !batch.isEmpty else { return (Self.reply(id: .null, .failure(.invalidRequest)).serialized(), false) }
        var authenticated = false
        var answers: [Data] = []
        for element in batch {
            guard budget.mayRunNext() else {
                // Not run; the error saying so is small and always sent.
                if !Self.isNotification(element) { answers.append(Self.reply(id: Self.id(of: element), .failure(budget.notRun)).serialized()) }
                continue
            }
            let before = budget.spent
            let (reply, ok) = handle(request: element, dispatch, &budget)
            authenticated = authenticated || ok
            if let reply { answers.append(answer(reply, id: Self.id(of: element), counted: budget.spent - before, &budget)) }
        }
        guard !answers.isEmpty else { return (nil, authenticated) }
        var joined = Data("[".utf8)
        for (index, part) in answers.enumerated() {
            if index > 0 { joined.append(UInt8(ascii: ",")) }
            joined.append(part)
        }
        joined.append(UInt8(ascii: "]"))
        return (joined, authenticated)
    }

    /// `reply` serialized, or the budget's error in its place when it does not fit. `counted`:
    /// the bytes of it counted already (a multicall's results, counted as they were made).
    private func answer(_ reply: JSONValue, id: JSONValue, counted: Int, _ budget: inout AnswerBudget) -> Data {
        let bytes = reply.serialized()
        // A multicall judged its results one by one already: its envelope is always sent.
        if counted > 0 || budget.spend(bytes.count) { return bytes }
        return Self.reply(id: id, .failure(budget.tooLarge)).serialized()
    }

    /// The calls `request` holds: one per request, one per entry of a `system.multicall`.
    static func callCount(_ request: JSONValue) -> Int {
        func calls(_ element: JSONValue) -> Int {
            guard element["method"]?.string == "system.multicall", case .array(let params)? = element["params"] else { return 1 }
            let list = params.first { $0.array != nil }?.array
            return max(1, list?.count ?? 1)
        }
        guard case .array(let batch) = request else { return calls(request) }
        return batch.reduce(0) { $0 + calls($1) }
    }

    /// A request's id as it is echoed back (null when it has none a reply may carry).
    static func id(of request: JSONValue) -> JSONValue {
        switch request["id"] {
        case .string?, .int?, .uint?, .double?: return request["id"] ?? .null
        default: return .null
        }
    }

    static func isNotification(_ request: JSONValue) -> Bool {
        guard case .object(let fields) = request else { return false }
        return fields["id"] == nil
    }

    private func handle(request: JSONValue, _ dispatch: Dispatch, _ budget: inout AnswerBudget) -> (JSONValue?, Bool) {
        guard case .object(let fields) = request else { return (Self.reply(id: .null, .failure(.invalidRequest)), false) }
        // An id is a string, a number or null (JSON-RPC 2.0); anything else is not echoed back.
        let id: JSONValue
        switch fields["id"] {
        case nil, .null?: id = .null
        case .string?, .int?, .uint?, .double?: id = fields["id"] ?? .null
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
        let (result, authenticated) = call(method, params, dispatch, &budget)
        return (isNotification ? nil : Self.reply(id: id, result), authenticated)
    }

    /// One call: the token checked (and removed from the params), then the method.
    package func call(_ method: String, _ params: [JSONValue], _ dispatch: Dispatch) -> (Result<JSONValue, RPCError>, Bool) {
        var budget = AnswerBudget(limit: maximumAnswerBytes, seconds: maximumMessageSeconds)
        return call(method, params, dispatch, &budget)
    }

    private func call(_ method: String, _ params: [JSONValue], _ dispatch: Dispatch, _ budget: inout AnswerBudget) -> (Result<JSONValue, RPCError>, Bool) {
        if method == "system.multicall" {
            return multicall(params, dispatch, &budget)
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
    /// as `{code, message}`. Its results count against the message's answer budget one by one.
    private func multicall(_ params: [JSONValue], _ dispatch: Dispatch, _ budget: inout AnswerBudget) -> (Result<JSONValue, RPCError>, Bool) {
        guard let calls = params.first?.array, params.count == 1 else {
            return (.failure(.invalidParams("system.multicall takes one list of {methodName, params}")), false)
        }
        var authenticated = false
        var results: [JSONValue] = []
        for entry in calls {
            guard budget.mayRunNext() else {
                results.append(budget.notRun.json)
                continue
            }
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
            let (result, ok) = call(name, nested, dispatch, &budget)
            authenticated = authenticated || ok
            let made: JSONValue
            switch result {
            case .success(let value): made = [value]
            case .failure(let error): made = error.json
            }
            results.append(budget.spend(made.serialized().count) ? made : budget.tooLarge.json)
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
    package static func reply(id: JSONValue, _ result: Result<JSONValue, RPCError>) -> JSONValue {
        switch result {
        case .success(let value): return ["jsonrpc": "2.0", "id": id, "result": value]
        case .failure(let error): return ["jsonrpc": "2.0", "id": id, "error": error.json]
        }
    }
}
