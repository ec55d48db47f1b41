import Foundation

/// An HTTP entity tag (RFC 9110 §8.8.3).
package struct EntityTag: Equatable, Sendable, Codable {
    /// True for a weak validator (`W/"..."`), which cannot guard a byte-range resume.
    package let isWeak: Bool
    /// The opaque tag including its double quotes, e.g. "\"abc\"".
    package let opaqueTag: String

    /// Creates a tag from its parts as given; `opaqueTag` should include its double quotes.
    package init(isWeak: Bool, opaqueTag: String) {
        self.isWeak = isWeak
        self.opaqueTag = opaqueTag
    }

    /// Parses `"abc"` or `W/"abc"`; nil for malformed (no closing quote, embedded quote, control chars).
    ///
    /// An unquoted token such as `abc` (or `W/abc`) is accepted as `"abc"`, because some
    /// servers send ETags without quotes and refusing them would make resume impossible.
    /// The weak prefix is case-sensitive, as in the RFC grammar.
    package init?(headerValue: String) {
        // Work on scalars: a quote followed by a combining mark is one Character, which a
        // Character comparison would not recognise as the closing quote.
        var scalars = Substring(headerValue.trimmingWhitespaceAndNewlines()).unicodeScalars
        let isWeak = scalars.starts(with: "W/".unicodeScalars)
        if isWeak { scalars = scalars.dropFirst(2) }

        let inner: Substring.UnicodeScalarView
        if scalars.first == "\"" {
            guard scalars.count >= 2, scalars.last == "\"" else { return nil }
            inner = scalars.dropFirst().dropLast()
        } else {
            guard !scalars.isEmpty else { return nil }
            inner = scalars
        }
        guard inner.allSatisfy(Self.isTagCharacter) else { return nil }
        self.init(isWeak: isWeak, opaqueTag: "\"" + String(String.UnicodeScalarView(inner)) + "\"")
    }

    /// The header form: W/"abc" or "abc".
    package var headerValue: String {
        isWeak ? "W/\(opaqueTag)" : opaqueTag
    }

    /// Strong comparison (RFC 9110 §8.8.3.2): both strong and same opaque tag.
    package func stronglyMatches(_ other: EntityTag) -> Bool {
        !isWeak && !other.isWeak && sameOpaqueTag(other)
    }

    /// Weak comparison (RFC 9110 §8.8.3.2): same opaque tag, either may be weak.
    package func weaklyMatches(_ other: EntityTag) -> Bool {
        sameOpaqueTag(other)
    }

    /// Byte for byte, as the RFC compares tags: Swift's `==` on strings is canonical equivalence,
    /// under which two different tags (`"é"` precomposed, `"e"` + U+0301) would be one version.
    private func sameOpaqueTag(_ other: EntityTag) -> Bool {
        opaqueTag.utf8.elementsEqual(other.opaqueTag.utf8)
    }

    /// `etagc` from RFC 9110: visible ASCII except DQUOTE, plus non-ASCII text.
    private static func isTagCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x21, 0x23...0x7E: true
        case 0x80...: scalar.properties.generalCategory != .control
        default: false
        }
    }
}
