import Foundation
import Testing

@testable import HaulCore

@Suite("Trimming: the shortcut for header values")
struct TrimmingTests {
    static let samples = [
        "", " ", "\t", "123", " 123", "123 ", "\t123\t", "\u{00A0}123", "123\u{00A0}", "\u{3000}x\u{2003}", "\"abc\"",
        " W/\"abc\" ", "\r\n\"e\"\r\n", "\u{0085}x", "x\u{0085}", "é", "aé", "éa", "\u{7F}x", "x\u{1}", "Thu, 01 Jan 1970 00:00:00 GMT",
    ]

    @Test(
        "GIVEN values with every kind of edge (none, ASCII, Unicode spaces, newlines, non-ASCII letters) WHEN trimmed THEN the result is Foundation's",
        arguments: samples)
    func sameAsFoundation(_ text: String) {
        #expect(text.trimmingWhitespace() == text.trimmingCharacters(in: .whitespaces))
        #expect(text.trimmingWhitespaceAndNewlines() == text.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
