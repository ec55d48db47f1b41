/// What a request's `Range` (with `If-Range`) asks of a file of a known length: the whole, one
/// span of it, or a span it cannot have (RFC 9110 sections 13.1.5 and 14). Pure.
enum FileRange: Equatable {
    /// The whole file (no `Range`, one that is not `bytes=`, several ranges, or an `If-Range`
    /// that no longer matches: a server may always answer with the whole).
    case whole
    /// Bytes `first...last` (inclusive, within the file).
    case partial(first: Int64, last: Int64)
    /// A syntactically valid range that starts past the end: 416 with `Content-Range: bytes */length`.
    case unsatisfiable

    /// The answer to `range` (the field's value, nil when absent) for a file of `length` bytes
    /// whose strong validator is `etag`; `ifRange` is the `If-Range` field, if any.
    static func of(_ range: String?, ifRange: String?, length: Int64, etag: String) -> FileRange {
        guard let range else { return .whole }
        // If-Range with an entity tag must match it exactly (strong comparison); a date (or a
        // weak tag) is not a validator this server vouches for, so the whole file is sent.
        if let ifRange, ifRange.trimmingHTTPWhitespace() != etag { return .whole }
        let text = range.trimmingHTTPWhitespace()
        guard text.utf8.count > 6, text.prefix(6).caseInsensitiveEquals("bytes=") else { return .whole }
        let spec = text.dropFirst(6).trimmingHTTPWhitespace()
        // One range only: several would need multipart/byteranges, which the whole file replaces.
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .whole }
        let firstText = spec[..<dash].trimmingHTTPWhitespace()
        let lastText = spec[spec.index(after: dash)...].trimmingHTTPWhitespace()
        if firstText.isEmpty {
            // bytes=-N: the last N bytes.
            guard let suffix = Self.number(lastText) else { return .whole }
            guard suffix > 0, length > 0 else { return .unsatisfiable }
            return .partial(first: max(0, length - suffix), last: length - 1)
        }
        guard let first = Self.number(firstText) else { return .whole }
        var last = length - 1
        if !lastText.isEmpty {
            guard let value = Self.number(lastText) else { return .whole }
            // last < first is invalid syntax: ignored, the whole file goes.
            guard value >= first else { return .whole }
            last = min(value, length - 1)
        }
        guard first < length else { return .unsatisfiable }
        return .partial(first: first, last: last)
    }

    /// Digits only (no sign, no spaces). A value past Int64 is Int64.max: it is still past any
    /// file's end (RFC 9110 gives the numbers no bound), so `bytes=0-<huge>` is the whole file as a
    /// range and `bytes=<huge>-` unsatisfiable, not a range ignored.
    private static func number(_ text: Substring) -> Int64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int64(text) ?? .max
    }
}

/// The validators and naming of a served file. Pure.
enum FileValidators {
    /// A strong entity tag from the file's identity (device, inode), size and modification time:
    /// another file, or the same one changed, has another.
    static func etag(device: UInt64, inode: UInt64, size: Int64, modifiedSeconds: Int64, modifiedNanoseconds: Int64) -> String {
        let parts = [device, inode, UInt64(bitPattern: size), UInt64(bitPattern: modifiedSeconds), UInt64(bitPattern: modifiedNanoseconds)]
        return "\"" + parts.map { String($0, radix: 16) }.joined(separator: "-") + "\""
    }

    /// Whether `If-None-Match` (its value) matches `etag` (weak comparison, as RFC 9110 13.1.2
    /// asks: `W/` is ignored; `*` matches any file).
    static func noneMatchHits(_ field: String?, etag: String) -> Bool {
        guard let field else { return false }
        let bare = etag.hasPrefix("W/") ? String(etag.dropFirst(2)) : etag
        return field.split(separator: ",").contains { item in
            var tag = item.trimmingHTTPWhitespace()
            if tag == "*" { return true }
            if tag.hasPrefix("W/") { tag = tag.dropFirst(2) }
            return tag == bare
        }
    }

    /// `Content-Disposition: attachment` naming `name` safely (RFC 6266): `filename` with a plain
    /// ASCII stand-in (quotes, backslashes, controls and non-ASCII replaced by `_`), and
    /// `filename*` with the exact name, UTF-8 percent-encoded.
    static func contentDisposition(fileName name: String) -> String {
        let fallback = String(
            name.unicodeScalars.map { scalar -> Character in
                let value = scalar.value
                if value < 0x20 || value >= 0x7F || scalar == "\"" || scalar == "\\" || scalar == "%" || scalar == ";" { return "_" }
                return Character(scalar)
            })
        var encoded = ""
        for byte in name.utf8 {
            let isAttrChar =
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || "!#$&+-.^_`|~".utf8.contains(byte)
            if isAttrChar {
                encoded.append(Character(Unicode.Scalar(byte)))
            } else {
                encoded += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return "attachment; filename=\"\(fallback)\"; filename*=UTF-8''\(encoded)"
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
