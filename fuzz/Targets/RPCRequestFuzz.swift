// fuzz-sources: Sources/HaulJSON/*.swift Sources/HaulRPC/*.swift
// The RPC request path of `haul serve`, before any download is touched: arbitrary bytes as a
// request body (a request, a batch, a multicall) through parsing, the token check and dispatch to
// handlers that read their parameters as the real ones do (GIDs, keys, options, integers) and do
// the arithmetic the real ones do on them (list windows, positions). Checks: nothing traps (deep
// nesting, any Int64); every answer is JSON that parses back; a call reaches its handler once with
// the right token and never without it; a window lies inside its list and a position inside the list.

import Foundation

private let secret = "s3cret"
private let endpoint = RPCEndpoint(secret: secret, openMethods: ["system.listMethods"], maximumBodyBytes: 1 << 20)
private let list = Array(0..<7)
/// Calls that reached a handler (libFuzzer runs one input at a time, on one thread).
nonisolated(unsafe) private var dispatched = 0

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let body = Data(bytes: data, count: size)
    check(body)
    // The same bytes inside a well-formed call with the right token, so that handlers see them.
    if let value = try? JSONParser.parse(body) {
        let wrapped: JSONValue = ["jsonrpc": "2.0", "id": 1, "method": "aria2.tellWaiting", "params": [.string("token:" + secret), value, value]]
        // Reaches its handler exactly once with the right token, never with a wrong one.
        dispatched = 0
        check(wrapped.serialized())
        require(dispatched == 1, "a call with the right token was dispatched \(dispatched) times")
        let forged: JSONValue = ["jsonrpc": "2.0", "id": 2, "method": "aria2.tellWaiting", "params": [value, value]]
        dispatched = 0
        check(forged.serialized())
        if value != .string("token:" + secret) {
            require(dispatched == 0, "a call without the right token reached its handler")
        }
        let multicall: JSONValue = [
            "jsonrpc": "2.0", "id": "m", "method": "system.multicall",
            "params": [[["methodName": "aria2.changePosition", "params": ["token:s3cret", "0000000000000001", value, "POS_CUR"]]]],
        ]
        check(multicall.serialized())
    }
    return 0
}

private func check(_ body: Data) {
    let (response, _) = endpoint.handle(body, dispatch: dispatch)
    guard let response else { return }
    require((try? JSONParser.parse(response)) != nil, "answer is not JSON: \(String(decoding: response, as: UTF8.self).prefix(200))")
}

private func dispatch(_ method: String, _ params: [JSONValue]) -> Result<JSONValue, RPCError> {
    dispatched += 1
    do throws(RPCError) {
        switch method {
        case "aria2.tellWaiting", "aria2.tellStopped":
            let offset = try RPCParams.integer(params, at: 0, "offset")
            let count = try RPCParams.integer(params, at: 1, "num")
            _ = try RPCParams.keys(params.count > 2 ? params[2] : nil)
            let window = RPCParams.window(list, offset: offset, count: count)
            require(window.count <= list.count && window.count <= max(0, count), "window of \(window.count) for \(offset), \(count)")
            return .success(.array(window.map { .int(Int64($0)) }))
        case "aria2.changePosition":
            _ = try RPCParams.gid(params)
            let position = try RPCParams.integer(params, at: 1, "pos")
            guard params.count > 2, let origin = params[2].string.flatMap(RPCParams.Origin.init(rawValue:)) else {
                throw RPCError.invalidParams("how")
            }
            for current in [0, list.count / 2, list.count - 1] {
                let index = RPCParams.movedIndex(current: current, count: list.count, position: position, from: origin)
                require((0..<list.count).contains(index), "position \(index) for \(position) \(origin)")
            }
            return .success(.int(0))
        case "aria2.tellStatus":
            _ = try RPCParams.gid(params)
            return .success(.array((try RPCParams.keys(params.count > 1 ? params[1] : nil) ?? []).map(JSONValue.string)))
        case "aria2.addUri":
            return .success(.object(try RPCParams.options(params, at: 1)))
        default:
            return .success(.array(params))
        }
    } catch {
        return .failure(error)
    }
}
