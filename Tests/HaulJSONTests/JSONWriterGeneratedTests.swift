import Foundation
import HaulJSON
import HaulTestSupport
import Testing

/// The run-at-once string escaping against JSONSerialization and JSONDecoder over generated text:
/// every control byte, quotes, backslashes, multi-byte UTF-8 at every seam, and the empty string.
@Suite("JSON writer strings, generated")
struct JSONWriterGeneratedTests {
    private static let pieces: [String] =
        (0..<0x20).map { String(UnicodeScalar(UInt8($0))) } + [
            "\"", "\\", "/", "a", "plain text", "é", "e\u{301}", "東京", "🚀", "\u{7F}", "\u{2028}", "\u{202E}", "\u{FFFD}", "\u{10FFFF}", "",
            "\\u0000", "\"\"", "\\\\",
        ]

    @Test("GIVEN 20,000 generated strings WHEN written THEN byte for byte as JSONSerialization, and JSONDecoder reads each back")
    func agreesWithFoundation() throws {
        var random = WordGenerator(seed: 1_038)
        var disagreements: [String] = []
        for _ in 0..<20_000 {
            var text = ""
            for _ in 0..<Int.random(in: 0...8, using: &random) { text += Self.pieces.randomElement(using: &random)! }
            let ours = JSONValue.array([.string(text)]).serialized()
            let theirs = try JSONSerialization.data(withJSONObject: [text], options: [.withoutEscapingSlashes])
            if Array(ours) != Array(theirs) { disagreements.append(text.debugDescription) }
            if (try? JSONDecoder().decode([String].self, from: Data(ours))) != [text] { disagreements.append("decoded: " + text.debugDescription) }
            if JSONValue.parse(Data(ours)) != .array([.string(text)]) { disagreements.append("parsed: " + text.debugDescription) }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(5))")
    }

    @Test("GIVEN the empty string and one of each escaped byte alone WHEN written THEN as JSONSerialization writes them")
    func singleBytes() throws {
        for text in [""] + (0..<0x20).map({ String(UnicodeScalar(UInt8($0))) }) + ["\"", "\\"] {
            let ours = JSONValue.array([.string(text)]).serialized()
            let theirs = try JSONSerialization.data(withJSONObject: [text], options: [.withoutEscapingSlashes])
            #expect(Array(ours) == Array(theirs), "\(text.debugDescription)")
        }
    }
}
