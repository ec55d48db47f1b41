import Foundation

extension String {
    /// `trimmingCharacters(in: .whitespaces)`, without Foundation's character-set walk for a value
    /// that starts and ends with a visible ASCII character (nearly every header value): the result
    /// is the same string in every case.
    package func trimmingWhitespace() -> String {
        Self.hasNoEdgeWhitespace(self) ? self : trimmingCharacters(in: .whitespaces)
    }

    /// `trimmingCharacters(in: .whitespacesAndNewlines)`, with the same shortcut.
    package func trimmingWhitespaceAndNewlines() -> String {
        Self.hasNoEdgeWhitespace(self) ? self : trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Whether the first and the last byte are visible ASCII: neither can then be (or end) a
    /// whitespace or newline character, Unicode's included (all of those are controls, the space,
    /// or outside ASCII).
    private static func hasNoEdgeWhitespace(_ text: String) -> Bool {
        let utf8 = text.utf8
        guard let first = utf8.first, let last = utf8.last else { return true }
        return (0x21...0x7E).contains(first) && (0x21...0x7E).contains(last)
    }
}
