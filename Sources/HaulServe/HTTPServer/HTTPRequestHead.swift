/// One header line of a request or a response, as sent (the name's case kept).
struct HTTPHeader: Sendable, Equatable {
    let name: String
    let value: String
}

/// A parsed HTTP/1.x request head: the request line and the header fields, in order.
struct HTTPRequestHead: Sendable, Equatable {
    let method: String
    /// The request target as sent (`/jsonrpc`, `/index.html?x=1`).
    let target: String
    /// The minor version: 0 for HTTP/1.0, 1 for HTTP/1.1.
    let minorVersion: Int
    let headers: [HTTPHeader]

    /// The target without its query.
    var path: String {
        guard let question = target.firstIndex(of: "?") else { return target }
        return String(target[..<question])
    }

    /// The first value of the field `name` (case-insensitive), or nil.
    func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    /// Every value of the field `name` (case-insensitive), in order.
    func values(_ name: String) -> [String] {
        headers.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
    }

    /// Whether the comma-separated field `name` lists `token` (case-insensitive), as
    /// `Connection: keep-alive, Upgrade` lists `upgrade`.
    func lists(_ token: String, in name: String) -> Bool {
        values(name).contains { value in
            value.split(separator: ",").contains { $0.trimmingHTTPWhitespace().caseInsensitiveEquals(token) }
        }
    }
}

extension StringProtocol {
    /// ASCII case-insensitive equality (header names and tokens are ASCII).
    func caseInsensitiveEquals(_ other: some StringProtocol) -> Bool {
        let left = utf8
        let right = other.utf8
        guard left.count == right.count else { return false }
        return zip(left, right).allSatisfy { Self.lowered($0) == Self.lowered($1) }
    }

    /// Without leading and trailing spaces and tabs.
    func trimmingHTTPWhitespace() -> Substring {
        var text = Substring(self)
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return text
    }

    private static func lowered(_ byte: UInt8) -> UInt8 {
        (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
    }
}
