import HaulCore

// Pure decisions: what the response looks like, from the request, the resource and the faults.
// No I/O here; the connection code carries plans out.

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
    /// An interim 1xx head sent before the response.
    var informational: Int?
    /// No reply at all: the connection is closed.
    var closeWithoutReply: Bool
    /// `Name:value` header lines.
    var headersWithoutSpace: Bool
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
        informational = faults.informational
        closeWithoutReply = faults.closeWithoutReply
        headersWithoutSpace = faults.headersWithoutSpace
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
                faults.ignoreIfRange || ifRangeAllowsRange(request.header("If-Range"), resource: resource)
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
            if faults.withoutValidators {
                // Filtered last so that no validator slips in through the extra headers either.
                headers.removeAll { ["etag", "last-modified"].contains($0.0.lowercased()) }
            }
            bodyRange = selected
            self.headers = headers + faults.responseHeaders
            self.closesAfter = false
            finishFraming(request: request, lengthDelta: faults.lengthDelta)
            return
        } else {
            status = 404
            storage = Array("<html><body>not found</body></html>\n".utf8)
            headers.append(("Content-Type", "text/html"))
        }
        bodyRange = 0..<storage.count
        self.headers = headers + faults.responseHeaders
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

extension ResponsePlan {
    /// The reason phrase of a status line the server writes (every status line needs one).
    static func reasonPhrase(_ status: Int) -> String {
        let phrase = HTTPStatus.reasonPhrase(status)
        return phrase.isEmpty ? "Status \(status)" : phrase
    }
}
