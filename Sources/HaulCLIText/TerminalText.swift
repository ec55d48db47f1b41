/// Makes untrusted text (server headers, URLs, file names, error messages that quote them) safe
/// to print on a terminal.
///
/// A terminal acts on control characters instead of showing them: `ESC ] 0 ; … BEL` retitles the
/// window, `ESC [ 2 J` clears the screen, `CR` overwrites the line so a forged message hides the
/// real one, and the bidi overrides reorder what follows so a name reads as something else. Such
/// characters are shown as visible escapes (`\u{1B}`) instead, so the reader sees that they were
/// there, and nothing the server sent can drive the terminal.
package enum TerminalText {
    /// `text` with every character a terminal would act on replaced by a visible `\u{XX}` escape:
    /// C0 controls (U+0000–U+001F), DEL (U+007F), C1 controls (U+0080–U+009F), the bidi embeddings,
    /// overrides and isolates (U+202A–U+202E, U+2066–U+2069) and the bidi marks (U+061C, U+200E,
    /// U+200F). Everything else, backslashes included, is kept as is.
    ///
    /// - Parameter keepingLineBreaks: keep LF (U+000A) as a line break. For messages Haul composes
    ///   itself over several lines; a server cannot put a raw LF into the strings they quote
    ///   (header values end at a line break, URLs are percent-encoded).
    package static func escaped(_ text: String, keepingLineBreaks: Bool = false) -> String {
        // Fast path: most messages contain nothing to escape.
        guard text.unicodeScalars.contains(where: { isActedOn($0, keepingLineBreaks: keepingLineBreaks) }) else {
            return text
        }
        var result = ""
        result.reserveCapacity(text.utf8.count + 16)
        // Scalars, not Characters: a control character can fuse with a following combining mark
        // into one Character and would then be missed.
        for scalar in text.unicodeScalars {
            if isActedOn(scalar, keepingLineBreaks: keepingLineBreaks) {
                result += "\\u{" + hex(scalar.value) + "}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    private static func isActedOn(_ scalar: Unicode.Scalar, keepingLineBreaks: Bool) -> Bool {
        switch scalar.value {
        case 0x0A: return !keepingLineBreaks
        case 0x00...0x1F, 0x7F...0x9F: return true
        case 0x202A...0x202E, 0x2066...0x2069, 0x061C, 0x200E, 0x200F: return true
        default: return false
        }
    }

    /// Upper-case hex, at least two digits (`1B`, `202E`), the way the Unicode charts name them.
    private static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return digits.count < 2 ? "0" + digits : digits
    }
}
