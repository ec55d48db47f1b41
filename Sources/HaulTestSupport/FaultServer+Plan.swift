import HaulCore
// Pure decisions: which faults apply, what a request's Range / If-Range mean, and
// what the response looks like. No I/O here; the connection code carries plans out.

/// A resource as stored by the server.
struct StoredResource: Sendable {
    var body: [UInt8]
    var etag: String?
    var lastModified: String?
    var contentType: String
    var extraHeaders: [(String, String)]
}

/// All faults of one request, flattened into settings.
struct FaultSettings: Sendable {
    /// A reply that replaces the resource response (error page, redirect, 416).
    struct Override: Sendable {
        var status: Int
        var body: String
        var headers: [(String, String)]
    }

    enum Framing: Sendable, Equatable {
        case contentLength
        case chunked
        case closeDelimited
    }

    var ignoreRange = false
    var override: Override?
    var dropAfter: Int?
    var stall: (afterBytes: Int, seconds: Double)?
    var framing = Framing.contentLength
    var lengthDelta = 0
    var extraBytes = 0
    var extraHeaders: [(String, String)] = []
    var replacement: (body: [UInt8], etag: String?, lastModified: String?)?
    var bytesPerSecond: Int?
    var headerDelay: Double = 0

    init(_ faults: [Fault]) {
        for fault in faults { apply(fault) }
    }

    private mutating func apply(_ fault: Fault) {
        switch fault {
        case .normal:
            break
        case .ignoreRange:
            ignoreRange = true
        case .status(let code, let body):
            setOverride(Override(status: code, body: body, headers: []))
        case .status416(let withContentRange):
            // The total is only known once the resource is looked up; marked by a placeholder.
            let headers = withContentRange ? [("Content-Range", Self.totalPlaceholder)] : []
            setOverride(Override(status: 416, body: "range not satisfiable", headers: headers))
        case .dropAfter(let bytes):
            dropAfter = max(0, bytes)
        case .stall(let afterBytes, let seconds):
            stall = (max(0, afterBytes), seconds)
        case .chunked:
            framing = .chunked
        case .closeDelimited:
            framing = .closeDelimited
        case .wrongContentLength(let delta):
            lengthDelta += delta
        case .extraBytes(let count):
            extraBytes += max(0, count)
        case .redirect(let status, let location):
            setOverride(Override(status: status, body: "moved", headers: [("Location", location)]))
        case .contentDisposition(let value):
            extraHeaders.append(("Content-Disposition", value))
        case .gzip:
            extraHeaders.append(("Content-Encoding", "gzip"))
        case .replaceResource(let body, let etag, let lastModified):
            replacement = (body, etag, lastModified)
        case .retryAfter(let status, let value):
            setOverride(Override(status: status, body: "try again later", headers: [("Retry-After", value)]))
        case .throttle(let bytesPerSecond):
            self.bytesPerSecond = max(1, bytesPerSecond)
        case .delayHeaders(let seconds):
            headerDelay += max(0, seconds)
        case .combined(let faults):
            for inner in faults { apply(inner) }
        }
    }

    /// The first override wins, so `.combined` reads left to right.
    private mutating func setOverride(_ value: Override) {
        if override == nil { override = value }
    }

    static let totalPlaceholder = "bytes */{TOTAL}"
}

/// What a `Range` header asks for, against a representation of a given length.
enum RangeRequest: Equatable {
    /// No usable range: answer 200 with the whole body (absent, malformed or multi-range).
    case ignore
    /// A valid range that selects no byte: 416.
    case unsatisfiable
    /// The bytes to send with 206.
    case bytes(Range<Int>)

    /// Parses a single `bytes=` range (RFC 9110 §14.1.2) against `total` bytes.
    init(header: String?, total: Int) {
        guard let header else {
            self = .ignore
            return
        }
        let value = header.trimmingOWS()
        guard value.count > 6, value.prefix(6).lowercased() == "bytes=" else {
            self = .ignore
            return
        }
        let spec = String(value.dropFirst(6)).trimmingOWS()
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else {
            self = .ignore
            return
        }
        let first = String(spec[..<dash]).trimmingOWS()
        let last = String(spec[spec.index(after: dash)...]).trimmingOWS()
        if first.isEmpty {
            guard let suffix = Self.decimal(last) else {
                self = .ignore
                return
            }
            if suffix == 0 {
                self = .unsatisfiable
            } else if total == 0 {
                // A non-zero suffix is satisfiable, but there is no byte to describe: send it whole.
                self = .ignore
            } else {
                self = .bytes(max(0, total - suffix)..<total)
            }
            return
        }
        guard let start = Self.decimal(first) else {
            self = .ignore
            return
        }
        var end = Int.max
        if !last.isEmpty {
            guard let parsed = Self.decimal(last), parsed >= start else {
                self = .ignore
                return
            }
            end = parsed
        }
        if start >= total {
            self = .unsatisfiable
        } else {
            self = .bytes(start..<(min(end, total - 1) + 1))
        }
    }

    /// ASCII digits only; values too large for `Int` saturate.
    private static func decimal(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text) ?? Int.max
    }
}

/// Whether an `If-Range` value lets the range through (RFC 9110 §13.1.5).
func ifRangeAllowsRange(_ value: String?, resource: StoredResource) -> Bool {
    guard let raw = value else { return true }
    let value = raw.trimmingOWS()
    if value.hasPrefix("W/") { return false }
    if value.hasPrefix("\"") {
        guard let etag = resource.etag, !etag.hasPrefix("W/") else { return false }
        return etag == value
    }
    guard let lastModified = resource.lastModified else { return false }
    return lastModified == value
}

/// Everything the connection needs to write one response.
struct ResponsePlan: Sendable {
    var status: Int
    var headers: [(String, String)]
    /// The storage the body is cut from (shared, not copied).
    var storage: [UInt8]
    /// The bytes of `storage` that form the body.
    var bodyRange: Range<Int>
    /// Whether the body bytes count towards `bodyBytesSent` (the resource, not an error page).
    var countsAsResourceBody: Bool
    var sendsBody: Bool
    var framing: FaultSettings.Framing
    var dropAfter: Int?
    var stall: (afterBytes: Int, seconds: Double)?
    var extraBytes: Int
    var bytesPerSecond: Int?
    var headerDelay: Double
    /// Close (gracefully) after the response.
    var closesAfter: Bool

    init(method: String, request: ParsedRequestHead, resource: StoredResource?, faults: FaultSettings) {
        let isHead = method.uppercased() == "HEAD"
        sendsBody = !isHead
        framing = faults.framing
        dropAfter = faults.dropAfter
        stall = faults.stall
        extraBytes = faults.extraBytes
        bytesPerSecond = faults.bytesPerSecond
        headerDelay = faults.headerDelay
        countsAsResourceBody = false

        var headers: [(String, String)] = []
        if let override = faults.override {
            status = override.status
            storage = Array(("<html><body>" + override.body + "</body></html>\n").utf8)
            headers.append(("Content-Type", "text/html"))
            let total = resource?.body.count ?? 0
            for (name, value) in override.headers {
                let filled = value == FaultSettings.totalPlaceholder ? "bytes */\(total)" : value
                headers.append((name, filled))
            }
        } else if let resource {
            var selected = 0..<resource.body.count
            status = 200
            var contentRange: String?
            let rangeHeader = request.header("Range")
            if !faults.ignoreRange, rangeHeader != nil,
                ifRangeAllowsRange(request.header("If-Range"), resource: resource)
            {
                switch RangeRequest(header: rangeHeader, total: resource.body.count) {
                case .ignore:
                    break
                case .unsatisfiable:
                    status = 416
                    contentRange = "bytes */\(resource.body.count)"
                    selected = 0..<0
                case .bytes(let range):
                    status = 206
                    contentRange = "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(resource.body.count)"
                    selected = range
                }
            }
            storage = resource.body
            countsAsResourceBody = status != 416
            if status == 416 {
                storage = Array("<html><body>range not satisfiable</body></html>\n".utf8)
                selected = 0..<storage.count
                headers.append(("Content-Type", "text/html"))
            } else {
                headers.append(("Content-Type", resource.contentType))
            }
            if let contentRange { headers.append(("Content-Range", contentRange)) }
            headers.append(("Accept-Ranges", "bytes"))
            if let etag = resource.etag { headers.append(("ETag", etag)) }
            if let lastModified = resource.lastModified { headers.append(("Last-Modified", lastModified)) }
            if status != 416 {
                headers += resource.extraHeaders
                headers += faults.extraHeaders
            }
            bodyRange = selected
            self.headers = headers
            self.closesAfter = false
            finishFraming(request: request, lengthDelta: faults.lengthDelta)
            return
        } else {
            status = 404
            storage = Array("<html><body>not found</body></html>\n".utf8)
            headers.append(("Content-Type", "text/html"))
        }
        bodyRange = 0..<storage.count
        self.headers = headers
        self.closesAfter = false
        finishFraming(request: request, lengthDelta: faults.lengthDelta)
    }

    /// Adds the length / framing / connection headers and decides whether to close afterwards.
    private mutating func finishFraming(request: ParsedRequestHead, lengthDelta: Int) {
        let clientCloses = !request.wantsKeepAlive
        switch framing {
        case .contentLength:
            headers.append(("Content-Length", String(max(0, bodyRange.count + lengthDelta))))
        case .chunked:
            headers.append(("Transfer-Encoding", "chunked"))
        case .closeDelimited:
            break
        }
        // Faults that simulate a broken server close without announcing it.
        let silentClose = dropAfter != nil || stall != nil || extraBytes > 0 || lengthDelta != 0
        let announcedClose = clientCloses || framing == .closeDelimited
        if announcedClose { headers.append(("Connection", "close")) }
        closesAfter = silentClose || announcedClose
    }
}

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

extension ResponsePlan {
    /// The reason phrase of a status line the server writes (every status line needs one).
    static func reasonPhrase(_ status: Int) -> String {
        let phrase = HTTPStatus.reasonPhrase(status)
        return phrase.isEmpty ? "Status \(status)" : phrase
    }
}

extension StringProtocol {
    /// Strips RFC 9110 optional whitespace (spaces and tabs) from both ends.
    fileprivate func trimmingOWS() -> String {
        let isOWS: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isOWS($0) }), let last = lastIndex(where: { !isOWS($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
