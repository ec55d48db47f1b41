/// A JSON-RPC error as aria2 answers it: `{"code": …, "message": …}`. aria2 answers its own
/// failures (an unknown GID, a wrong token, a bad option) with code 1; the JSON-RPC 2.0 codes are
/// for requests that are not JSON-RPC at all.
package struct RPCError: Error, Sendable, Equatable {
    package let code: Int
    package let message: String

    package init(code: Int = 1, _ message: String) {
        self.code = code
        self.message = message
    }

    package static let parse = RPCError(code: -32700, "Parse error.")
    package static let invalidRequest = RPCError(code: -32600, "Invalid Request.")
    package static let unauthorized = RPCError("Unauthorized")

    package static func noSuchMethod(_ name: String) -> RPCError {
        RPCError(code: -32601, "No such method: \(name)")
    }

    package static func invalidParams(_ detail: String) -> RPCError {
        RPCError(code: -32602, "Invalid params: \(detail)")
    }

    package static func notFound(_ gid: String) -> RPCError {
        RPCError("GID \(gid) is not found")
    }

    package var json: JSONValue {
        ["code": .int(Int64(code)), "message": .string(message)]
    }
}

/// GIDs: 16 hex digits, the queue's id in hexadecimal, so a download keeps its GID across restarts
/// of `haul serve` (the id is the store's, and the store is durable).
package enum GID {
    package static func string(_ id: Int64) -> String {
        let hex = String(UInt64(bitPattern: id), radix: 16)
        return String(repeating: "0", count: max(0, 16 - hex.count)) + hex
    }

    /// The id of a GID; nil unless it is exactly 16 hex digits naming a positive id.
    package static func id(_ gid: String) -> Int64? {
        guard gid.utf8.count == 16, gid.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0 | 0x20) }),
            let value = UInt64(gid, radix: 16), value > 0, value <= UInt64(Int64.max)
        else { return nil }
        return Int64(value)
    }
}
