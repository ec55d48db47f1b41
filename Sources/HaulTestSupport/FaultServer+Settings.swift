// Pure decisions: which faults apply to one request, flattened into settings. No I/O here.

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
    var ignoreIfRange = false
    var withoutValidators = false
    var override: Override?
    var dropAfter: Int?
    var stall: (afterBytes: Int, seconds: Double)?
    var framing = Framing.contentLength
    var lengthDelta = 0
    var extraBytes = 0
    var extraHeaders: [(String, String)] = []
    /// Added to any response, whatever it is.
    var responseHeaders: [(String, String)] = []
    var replacement: (body: [UInt8], etag: String?, lastModified: String?)?
    var bytesPerSecond: Int?
    var headerDelay: Double = 0
    var informational: Int?
    var closeWithoutReply = false
    var headersWithoutSpace = false

    init(_ faults: [Fault]) {
        for fault in faults { apply(fault) }
    }

    private mutating func apply(_ fault: Fault) {
        switch fault {
        case .normal:
            break
        case .ignoreRange:
            ignoreRange = true
        case .ignoreIfRange:
            ignoreIfRange = true
        case .withoutValidators:
            withoutValidators = true
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
        case .header(let name, let value):
            responseHeaders.append((name, value))
        case .informational(let status):
            informational = status
        case .closeWithoutReply:
            closeWithoutReply = true
        case .headersWithoutSpace:
            headersWithoutSpace = true
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
