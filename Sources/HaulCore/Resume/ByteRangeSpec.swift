import Foundation

/// A byte range the user asks for, as in RFC 9110 §14.1.2: `x-y`, `q-`, `-z`.
public enum ByteRangeSpec: Equatable, Sendable {
    /// Bytes `first` through `last`, both inclusive ("x-y"); `first <= last`.
    case closed(first: Int64, last: Int64)
    /// Everything from byte `first` to the end ("q-").
    case from(first: Int64)
    /// The final `length` bytes ("-z"); `length > 0`.
    case suffix(length: Int64)

    /// Parses the CLI form "x-y", "q-", "-z" (an optional leading "bytes=" is accepted).
    ///
    /// Only a single range is accepted: a multi-range request would produce a
    /// multipart response, which a file download cannot write in place.
    /// - Throws: `ByteRangeSpecError` whose message can be shown to a person as is.
    package init(parsing text: String) throws(ByteRangeSpecError) {
        var spec = Substring(text.trimmingCharacters(in: .whitespacesAndNewlines))
        if spec.lowercased().hasPrefix("bytes=") {
            spec = spec.dropFirst("bytes=".count)
        }
        // Echo the input so the user sees what was wrong, but not a pasted megabyte of it.
        let shown = text.count > 40 ? "\"\(text.prefix(40))…\"" : "\"\(text)\""
        guard !spec.isEmpty else {
            throw ByteRangeSpecError(message: "empty byte range: expected x-y, q- or -z")
        }
        guard !spec.contains(",") else {
            throw ByteRangeSpecError(message: "invalid byte range \(shown): only one range is supported")
        }
        guard let dash = spec.firstIndex(of: "-") else {
            throw ByteRangeSpecError(message: "invalid byte range \(shown): expected x-y, q- or -z")
        }
        let firstText = spec[..<dash]
        let lastText = spec[spec.index(after: dash)...]

        if firstText.isEmpty {
            guard !lastText.isEmpty else {
                throw ByteRangeSpecError(message: "invalid byte range \(shown): give a first byte, a suffix length, or both")
            }
            let length = try Self.number(lastText, role: "suffix length", in: shown)
            guard length > 0 else {
                throw ByteRangeSpecError(message: "invalid byte range \(shown): a suffix length must be greater than 0")
            }
            self = .suffix(length: length)
            return
        }

        let first = try Self.number(firstText, role: "first byte", in: shown)
        if lastText.isEmpty {
            self = .from(first: first)
            return
        }
        let last = try Self.number(lastText, role: "last byte", in: shown)
        guard first <= last else {
            throw ByteRangeSpecError(
                message: "invalid byte range \(shown): last byte \(last) is before first byte \(first)")
        }
        self = .closed(first: first, last: last)
    }

    /// The Range header value, e.g. "bytes=0-99", "bytes=100-", "bytes=-500".
    package var headerValue: String {
        switch self {
        case .closed(let first, let last): "bytes=\(first)-\(last)"
        case .from(let first): "bytes=\(first)-"
        case .suffix(let length): "bytes=-\(length)"
        }
    }

    private static func number(
        _ text: Substring, role: String, in shown: String
    ) throws(ByteRangeSpecError) -> Int64 {
        if let value = DecimalDigits.nonNegativeInt64(text) { return value }
        if DecimalDigits.isAllDigits(text) {
            throw ByteRangeSpecError(message: "invalid byte range \(shown): \(role) is too large")
        }
        throw ByteRangeSpecError(
            message: "invalid byte range \(shown): \(role) \"\(text)\" is not a whole number of bytes")
    }
}

/// Why a byte range given by the user could not be understood.
package struct ByteRangeSpecError: Error, Equatable, Sendable {
    /// A sentence a person can act on, naming the offending input.
    package let message: String

    /// Creates an error carrying `message`.
    package init(message: String) {
        self.message = message
    }
}
