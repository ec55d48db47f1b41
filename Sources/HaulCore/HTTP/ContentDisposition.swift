import Foundation

/// The Content-Disposition response header (RFC 6266, with RFC 8187 extended parameters).
package enum ContentDisposition {
    /// The file name the header suggests, `filename*` (RFC 8187 ext-value: charset'lang'pct-encoded,
    /// UTF-8 and ISO-8859-1 supported) preferred over `filename` (token or quoted-string with
    /// backslash escapes).
    ///
    /// Returns the raw decoded name, NOT sanitized (see `FileNameSanitizer`). nil when there is
    /// none or it is malformed. Parameter names are case-insensitive; whitespace, parameters in
    /// any order, a missing disposition type and unknown parameters are tolerated. If `filename*`
    /// is malformed or uses an unsupported charset, `filename` is used instead. When a parameter
    /// repeats, its first occurrence wins.
    package static func fileName(fromHeader value: String) -> String? {
        var plain: String?
        var extended: String?
        var seenPlain = false
        var seenExtended = false
        for segment in segments(of: value) {
            guard let equals = segment.firstIndex(of: "=") else { continue }
            let name = segment[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            let rawValue = segment[segment.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if name == "filename", !seenPlain {
                seenPlain = true
                plain = parameterValue(rawValue)
            } else if name == "filename*", !seenExtended {
                seenExtended = true
                extended = parameterValue(rawValue).flatMap(decodeExtendedValue)
            }
        }
        return [extended, plain].lazy.compactMap { $0 }.first { !$0.isEmpty }
    }

    /// Splits at semicolons that are outside quoted strings.
    private static func segments(of header: String) -> [String] {
        var result: [String] = []
        var current = String.UnicodeScalarView()
        var inQuotes = false
        var escaped = false
        for scalar in header.unicodeScalars {
            if escaped {
                escaped = false
            } else if inQuotes && scalar == "\\" {
                escaped = true
            } else if scalar == "\"" {
                inQuotes.toggle()
            } else if scalar == ";" && !inQuotes {
                result.append(String(current))
                current = String.UnicodeScalarView()
                continue
            }
            current.append(scalar)
        }
        result.append(String(current))
        return result
    }

    /// A token as is, or the unescaped content of a quoted-string; nil for an unterminated quote
    /// or text after the closing quote.
    private static func parameterValue(_ raw: String) -> String? {
        guard raw.unicodeScalars.first == "\"" else { return raw }
        var result = String.UnicodeScalarView()
        var escaped = false
        var closed = false
        for scalar in raw.unicodeScalars.dropFirst() {
            if closed { return nil }
            if escaped {
                result.append(scalar)
                escaped = false
            } else if scalar == "\\" {
                escaped = true
            } else if scalar == "\"" {
                closed = true
            } else {
                result.append(scalar)
            }
        }
        return closed ? String(result) : nil
    }

    /// Decodes `charset'language'pct-encoded` (RFC 8187 §3.2); nil when malformed or the charset
    /// is neither UTF-8 nor ISO-8859-1.
    private static func decodeExtendedValue(_ text: String) -> String? {
        let parts = text.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        let charset = parts[0].lowercased()
        guard let bytes = percentDecodedBytes(parts[2]) else { return nil }
        switch charset {
        case "utf-8":
            return String(validating: bytes, as: UTF8.self)
        case "iso-8859-1":
            // ISO-8859-1 maps each byte to the Unicode scalar of the same value.
            return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
        default:
            return nil
        }
    }

    /// Bytes of a value made of printable ASCII and `%XX` escapes; nil for a bad escape or any
    /// other character, since raw non-ASCII has no defined charset here.
    private static func percentDecodedBytes(_ text: Substring) -> [UInt8]? {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(hexValue),
                    let low = iterator.next().flatMap(hexValue)
                else { return nil }
                bytes.append(high << 4 | low)
            } else if byte > 0x20 && byte < 0x7F {
                bytes.append(byte)
            } else {
                return nil
            }
        }
        return bytes
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
