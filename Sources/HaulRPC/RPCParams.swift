/// Reading a call's parameters, and the arithmetic on numbers a client sends. Every number is
/// untrusted: any `Int64` may arrive, so offsets, counts and positions are clamped to the list
/// they index before any sum is formed (no sum can overflow, none can trap).
package enum RPCParams {
    package static func gid(_ params: [JSONValue], at index: Int = 0) throws(RPCError) -> (gid: String, id: Int64) {
        guard index < params.count, case .string(let gid) = params[index] else {
            throw RPCError.invalidParams("a GID (16 hex digits) is expected")
        }
        guard let id = GID.id(gid) else { throw RPCError.notFound(gid) }
        return (gid, id)
    }

    /// aria2's `keys` filter: nil (every field) or a list of names.
    package static func keys(_ value: JSONValue?) throws(RPCError) -> [String]? {
        guard let value, value != .null else { return nil }
        guard let list = value.array else { throw RPCError.invalidParams("keys must be a list of strings") }
        var keys: [String] = []
        for key in list {
            guard let name = key.string else { throw RPCError.invalidParams("keys must be a list of strings") }
            keys.append(name)
        }
        return keys
    }

    /// An integer parameter (a JSON number or a decimal string), any `Int64`.
    package static func integer(_ params: [JSONValue], at index: Int, _ name: String) throws(RPCError) -> Int64 {
        guard index < params.count, let value = params[index].integer else {
            throw RPCError.invalidParams("\(name) must be an integer")
        }
        return value
    }

    /// An options struct; absent or null is none.
    package static func options(_ params: [JSONValue], at index: Int) throws(RPCError) -> [String: JSONValue] {
        guard index < params.count, params[index] != .null else { return [:] }
        guard let options = params[index].object else { throw RPCError.invalidParams("options must be a struct") }
        return options
    }

    /// `tellWaiting` / `tellStopped`'s window: `count` elements from `offset`; a negative offset
    /// counts from the end and lists backwards, as aria2 does.
    package static func window<T>(_ list: [T], offset: Int64, count: Int64) -> [T] {
        guard count > 0, !list.isEmpty else { return [] }
        let size = Int64(list.count)
        let wanted = Int(min(count, size))
        if offset >= 0 {
            guard offset < size else { return [] }
            let start = Int(offset)
            return Array(list[start..<min(list.count, start + wanted)])
        }
        guard offset >= -size else { return [] }
        let last = Int(size + offset)
        return Array(list[max(0, last - wanted + 1)...last].reversed())
    }

    /// How `changePosition` reads its position.
    package enum Origin: String, Sendable {
        case set = "POS_SET"
        case current = "POS_CUR"
        case end = "POS_END"
    }

    /// The index an element at `current` of a list of `count` moves to (clamped into the list,
    /// as aria2 clamps).
    package static func movedIndex(current: Int, count: Int, position: Int64, from origin: Origin) -> Int {
        guard count > 0 else { return 0 }
        let last = Int64(count - 1)
        // Clamped first: any position beyond the list lands at its end, and the sums below stay small.
        let step = min(max(position, -(last + 1)), last + 1)
        let target: Int64
        switch origin {
        case .set: target = step
        case .current: target = Int64(current) + step
        case .end: target = last + step
        }
        return Int(min(max(0, target), last))
    }
}
