import Foundation

// Parsing the request head the server received.

/// The parsed request line and header fields.
struct ParsedRequestHead: Sendable {
    var method: String
    var target: String
    var version: String
    var headers: [(name: String, value: String)]

    /// The target without query or fragment, and without scheme/authority for absolute-form.
    var resourcePath: String {
        var path = Substring(target)
        if let schemeEnd = path.range(of: "://") {
            let afterScheme = path[schemeEnd.upperBound...]
            path = afterScheme.firstIndex(of: "/").map { afterScheme[$0...] } ?? "/"
        }
        if let cut = path.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            path = path[..<cut]
        }
        return String(path)
    }

    func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }

    /// The comma-separated tokens of every `Connection` header, lowercased.
    private var connectionTokens: [String] {
        headers.filter { $0.name.lowercased() == "connection" }
            .flatMap { $0.value.split(separator: ",") }
            .map { String($0).trimmingOWS().lowercased() }
    }

    var wantsKeepAlive: Bool {
        let tokens = connectionTokens
        if tokens.contains("close") { return false }
        if version.uppercased() == "HTTP/1.0" { return tokens.contains("keep-alive") }
        return true
    }

    /// Parses `METHOD SP target SP HTTP/x.y` and the header lines; nil when malformed.
    init?(text: String) {
        // "\r\n" is a single Character in Swift, so split on either form of line end.
        var lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\r\n" || $0 == "\n" })
            .map(String.init)
        while let first = lines.first, first.isEmpty { lines.removeFirst() }
        guard let requestLine = lines.first else { return nil }
        let parts = requestLine.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 3, parts[2].hasPrefix("HTTP/") else { return nil }
        method = String(parts[0])
        target = String(parts[1])
        version = String(parts[2])
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let name = String(line[..<colon])
            guard !name.isEmpty, !name.contains(" ") else { return nil }
            headers.append((name, String(line[line.index(after: colon)...]).trimmingOWS()))
        }
        self.headers = headers
    }
}

extension StringProtocol {
    /// Strips RFC 9110 optional whitespace (spaces and tabs) from both ends.
    func trimmingOWS() -> String {
        let isOWS: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isOWS($0) }), let last = lastIndex(where: { !isOWS($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
