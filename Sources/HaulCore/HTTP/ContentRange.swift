import Foundation

/// A Content-Range header value (RFC 9110 §14.4) for the `bytes` unit.
package struct ContentRange: Equatable, Sendable {
    /// The first byte of the inclusive span, nil for the unsatisfied form "bytes */1234".
    package let first: Int64?
    /// The last byte of the inclusive span, nil for the unsatisfied form "bytes */1234".
    package let last: Int64?
    /// The complete length, nil when the server sent "*".
    package let completeLength: Int64?

    /// Creates a value from its parts as given; no consistency check is made.
    package init(first: Int64?, last: Int64?, completeLength: Int64?) {
        self.first = first
        self.last = last
        self.completeLength = completeLength
    }

    /// Parses "bytes 0-499/1234", "bytes 0-499/*", "bytes */1234".
    ///
    /// Returns nil for anything malformed: other units, last < first, last >= completeLength,
    /// "*/*", missing parts, overflow, negative numbers. The unit is case-insensitive and
    /// surrounding whitespace is ignored.
    package init?(headerValue: String) {
        let trimmed = headerValue.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let space = trimmed.firstIndex(where: { $0 == " " || $0 == "\t" }) else { return nil }
        guard trimmed[..<space].lowercased() == "bytes" else { return nil }
        let rest = trimmed[space...].trimmingCharacters(in: .whitespaces)

        let halves = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        let spanText = halves[0]
        let lengthText = halves[1]

        let completeLength: Int64?
        if lengthText == "*" {
            completeLength = nil
        } else {
            guard let length = DecimalDigits.nonNegativeInt64(lengthText) else { return nil }
            completeLength = length
        }

        if spanText == "*" {
            // "*/*" says nothing at all; the unsatisfied form must carry a length.
            guard let completeLength else { return nil }
            self.init(first: nil, last: nil, completeLength: completeLength)
            return
        }

        let bounds = spanText.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2,
            let first = DecimalDigits.nonNegativeInt64(bounds[0]),
            let last = DecimalDigits.nonNegativeInt64(bounds[1]),
            first <= last
        else { return nil }
        if let completeLength, last >= completeLength { return nil }
        // A span whose length, or whose end offset (last + 1), cannot be represented is useless to
        // a caller counting bytes (a fuzzed "bytes 1100-9223372036854775807/*" once trapped there).
        guard !(last - first).addingReportingOverflow(1).overflow, last < Int64.max else { return nil }
        self.init(first: first, last: last, completeLength: completeLength)
    }

    /// Number of bytes in the span (last - first + 1), nil for the unsatisfied form.
    ///
    /// Also nil when the parts were built inconsistently (last < first) or the count overflows.
    package var length: Int64? {
        guard let first, let last, first <= last else { return nil }
        let (difference, overflowA) = last.subtractingReportingOverflow(first)
        let (count, overflowB) = difference.addingReportingOverflow(1)
        guard !overflowA, !overflowB else { return nil }
        return count
    }

    /// True for the unsatisfied form "bytes */1234" a server sends with 416.
    package var isUnsatisfied: Bool {
        first == nil || last == nil
    }
}
