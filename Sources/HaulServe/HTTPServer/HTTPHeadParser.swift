/// Reads an HTTP/1.x request head out of the bytes received so far. Pure: the connection hands it
/// its buffer after every read and acts on the verdict.
enum HTTPHeadParser {
    /// What the bytes so far amount to.
    enum Verdict: Sendable, Equatable {
        /// No blank line yet, and still within the limit: read more.
        case incomplete
        /// A whole head, `length` bytes with its blank line (the body or the next request follows).
        case head(HTTPRequestHead, length: Int)
        /// Answer with this status and close (431: too long, 400: malformed, 505: not HTTP/1.x).
        case refused(HTTPRefusal)
    }

    /// At most this many header fields.
    static let maximumFields = 100

    /// Parses `bytes` (the connection's unread input) whose head may be at most `limit` bytes.
    /// `resumeAt`: where the search for the head's end may start (the bytes before it were
    /// searched already), so a head trickled in byte by byte is not searched from its start
    /// again after every read.
    static func parse(_ bytes: ArraySlice<UInt8>, limit: Int, resumeAt: Int = 0) -> Verdict {
        guard let length = headLength(bytes, limit: limit, from: resumeAt) else {
            return bytes.count >= limit ? .refused(HTTPRefusal(431, "request head over \(limit) bytes")) : .incomplete
        }
        guard length <= limit else { return .refused(HTTPRefusal(431, "request head over \(limit) bytes")) }
        var lines = self.lines(bytes.prefix(length))
        // A client may send blank lines before a request (RFC 9112 section 2.2).
        while lines.first?.isEmpty == true { lines.removeFirst() }
        guard let requestLine = lines.first else { return .refused(HTTPRefusal(400, "no request line")) }
        let fields = lines.dropFirst().filter { !$0.isEmpty }
        guard fields.count <= maximumFields else {
            return .refused(HTTPRefusal(431, "more than \(maximumFields) header fields"))
        }
        switch parseRequestLine(requestLine) {
        case .failure(let refusal):
            return .refused(refusal)
        case .success(let (method, target, minor)):
            var headers: [HTTPHeader] = []
            for field in fields {
                switch parseField(field) {
                case .success(let header): headers.append(header)
                case .failure(let refusal): return .refused(refusal)
                }
            }
            return .head(HTTPRequestHead(method: method, target: target, minorVersion: minor, headers: headers), length: length)
        }
    }

    /// The length of the head up to and with its blank line, or nil when there is none yet
    /// (looked for in the first `limit` + 4 bytes only, from `resume` on). Lines end in CRLF or
    /// a bare LF; blank lines before the request line do not end it.
    static func headLength(_ bytes: ArraySlice<UInt8>, limit: Int, from resume: Int = 0) -> Int? {
        let base = bytes.startIndex
        let end = min(bytes.count, limit + 4)
        var start = 0
        while start < end, bytes[base + start] == 0x0D || bytes[base + start] == 0x0A { start += 1 }
        var index = max(start, resume)
        while index < end {
            if bytes[base + index] == 0x0A {
                if index + 1 < end, bytes[base + index + 1] == 0x0A { return index + 2 }
                if index + 2 < end, bytes[base + index + 1] == 0x0D, bytes[base + index + 2] == 0x0A { return index + 3 }
            }
            index += 1
        }
        return nil
    }

    /// The head's lines without their line ends (the last one, blank, included).
    private static func lines(_ head: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        var lines: [ArraySlice<UInt8>] = []
        var start = head.startIndex
        for index in head.indices where head[index] == 0x0A {
            var line = head[start..<index]
            if line.last == 0x0D { line = line.dropLast() }
            lines.append(line)
            start = index + 1
        }
        return lines
    }

    private static func parseRequestLine(_ line: ArraySlice<UInt8>) -> Result<(String, String, Int), HTTPRefusal> {
        let parts = line.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].allSatisfy(isTokenByte) else {
            return .failure(HTTPRefusal(400, "malformed request line"))
        }
        guard !parts[1].isEmpty, parts[1].allSatisfy({ (0x21...0x7E).contains($0) }) else {
            return .failure(HTTPRefusal(400, "malformed request target"))
        }
        let version = Array(parts[2])
        guard version.count == 8, version.starts(with: Array("HTTP/".utf8)), version[6] == 0x2E,
            (0x30...0x39).contains(version[5]), (0x30...0x39).contains(version[7])
        else {
            return .failure(HTTPRefusal(400, "malformed HTTP version"))
        }
        guard version[5] == 0x31, version[7] <= 0x31 else {
            return .failure(HTTPRefusal(505, "only HTTP/1.0 and HTTP/1.1 are served"))
        }
        return .success((String(decoding: parts[0], as: UTF8.self), String(decoding: parts[1], as: UTF8.self), Int(version[7] - 0x30)))
    }

    private static func parseField(_ line: ArraySlice<UInt8>) -> Result<HTTPHeader, HTTPRefusal> {
        if line.first == 0x20 || line.first == 0x09 {
            return .failure(HTTPRefusal(400, "folded header lines are not accepted"))
        }
        guard let colon = line.firstIndex(of: 0x3A), colon > line.startIndex, line[..<colon].allSatisfy(isTokenByte) else {
            return .failure(HTTPRefusal(400, "malformed header field"))
        }
        var value = line[(colon + 1)...]
        while let first = value.first, first == 0x20 || first == 0x09 { value = value.dropFirst() }
        while let last = value.last, last == 0x20 || last == 0x09 { value = value.dropLast() }
        guard value.allSatisfy({ ($0 >= 0x20 && $0 != 0x7F) || $0 == 0x09 }) else {
            return .failure(HTTPRefusal(400, "control characters in a header value"))
        }
        return .success(HTTPHeader(name: String(decoding: line[..<colon], as: UTF8.self), value: String(decoding: value, as: UTF8.self)))
    }

    /// A `tchar` of RFC 9110: what a method or a field name is made of.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        default: return Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }
}
