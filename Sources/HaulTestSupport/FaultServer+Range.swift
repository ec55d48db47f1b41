// Pure decisions: what a request's Range / If-Range mean against the stored resource.

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
