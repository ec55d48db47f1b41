/// The status line and header fields of one HTTP response, before its body.
package struct ResponseHead: Sendable, Equatable {
    /// The HTTP status code.
    package let status: Int
    /// The header fields, in order.
    package let headers: HTTPHeaders

    /// A response head with this status and these fields.
    package init(status: Int, headers: HTTPHeaders) {
        self.status = status
        self.headers = headers
    }

    /// `Content-Length`, when present and a valid non-negative number.
    package var contentLength: Int64? {
        guard let raw = headers["Content-Length"]?.trimmingWhitespace(),
            !raw.isEmpty, raw.allSatisfy(\.isASCIIDigit), let value = Int64(raw)
        else { return nil }
        return value
    }

    /// `Content-Range`, parsed; nil when absent or malformed.
    package var contentRange: ContentRange? {
        headers["Content-Range"].flatMap(ContentRange.init(headerValue:))
    }

    /// The response's validators: a strong or weak `ETag` and `Last-Modified`.
    package var validators: Validators {
        Validators(
            etag: headers["ETag"].flatMap(EntityTag.init(headerValue:)),
            lastModified: headers["Last-Modified"]?.trimmingWhitespace()
        )
    }

    /// The content coding, lower-cased; nil when absent or `identity`.
    package var contentEncoding: String? {
        guard let raw = headers["Content-Encoding"]?.trimmingWhitespace().lowercased(),
            !raw.isEmpty, raw != "identity"
        else { return nil }
        return raw
    }

    /// Whether the server says it accepts byte ranges.
    package var acceptsByteRanges: Bool {
        headers["Accept-Ranges"]?.lowercased().contains("bytes") ?? false
    }

    /// Whether the status is a redirect Haul follows (301, 302, 303, 307, 308).
    package var isRedirect: Bool {
        [301, 302, 303, 307, 308].contains(status)
    }
}

extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
