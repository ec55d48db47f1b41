import Foundation
import Testing

@testable import HaulCLIText

@Suite("TerminalText")
struct TerminalTextTests {
    @Test(
        "GIVEN text without controls WHEN escaped THEN it is unchanged",
        arguments: ["", "saved /tmp/a.bin (1.0 MiB)", "naïve €.txt 日本語 👍🏽", #"C:\dir\file"#, "tab-free", "e\u{301}"])
    func plainTextIsUnchanged(text: String) {
        #expect(TerminalText.escaped(text) == text)
    }

    @Test(
        "GIVEN terminal control sequences WHEN escaped THEN each control is spelled out",
        arguments: [
            ("\u{1B}]0;pwned\u{07}", #"\u{1B}]0;pwned\u{07}"#),
            ("\u{1B}[2J", #"\u{1B}[2J"#),
            ("a\rb", #"a\u{0D}b"#),
            ("\u{0}", #"\u{00}"#),
            ("x\u{7F}y", #"x\u{7F}y"#),
            ("\u{9B}31m", #"\u{9B}31m"#),
            ("\u{85}", #"\u{85}"#),
            ("\u{9D}0;t\u{9C}", #"\u{9D}0;t\u{9C}"#),
            ("\t", #"\u{09}"#),
        ])
    func controlsAreEscaped(raw: String, expected: String) {
        #expect(TerminalText.escaped(raw) == expected)
    }

    @Test(
        "GIVEN bidi overrides, isolates and marks WHEN escaped THEN they are spelled out",
        arguments: [
            ("evil\u{202E}gpj.exe", #"evil\u{202E}gpj.exe"#),
            ("\u{202A}\u{202B}\u{202C}\u{202D}", #"\u{202A}\u{202B}\u{202C}\u{202D}"#),
            ("\u{2066}a\u{2067}b\u{2068}c\u{2069}", #"\u{2066}a\u{2067}b\u{2068}c\u{2069}"#),
            ("\u{200E}\u{200F}\u{061C}", #"\u{200E}\u{200F}\u{61C}"#),
        ])
    func bidiControlsAreEscaped(raw: String, expected: String) {
        #expect(TerminalText.escaped(raw) == expected)
    }

    @Test("GIVEN a line feed WHEN escaped THEN it is spelled out unless line breaks are kept")
    func lineFeedIsKeptOnlyWhenAsked() {
        #expect(TerminalText.escaped("a\nb") == #"a\u{0A}b"#)
        #expect(TerminalText.escaped("a\nb", keepingLineBreaks: true) == "a\nb")
        #expect(TerminalText.escaped("a\r\nb\u{1B}", keepingLineBreaks: true) == "a\\u{0D}\nb\\u{1B}")
    }

    @Test("GIVEN a control fused with a combining mark into one Character WHEN escaped THEN it is still found")
    func controlInsideAGraphemeClusterIsEscaped() {
        let fused = "\u{1B}\u{301}[2J"
        #expect(TerminalText.escaped(fused) == "\\u{1B}\u{301}[2J")
    }

    @Test("GIVEN every scalar from U+0000 to U+00FF WHEN escaped THEN no C0, DEL or C1 control survives, and nothing else is touched")
    func noControlSurvives() {
        let all = String(String.UnicodeScalarView((0...0xFF).compactMap(Unicode.Scalar.init)))
        let escaped = TerminalText.escaped(all)
        #expect(!escaped.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
        // 32 C0 + DEL + 32 C1 escapes; the printable runs around them are intact.
        #expect(escaped.components(separatedBy: "\\u{").count - 1 == 65)
        #expect(escaped.contains(" !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~\\u{7F}\\u{80}"))
        #expect(escaped.hasSuffix("\\u{9F}\u{A0}¡¢£¤¥¦§¨©ª«¬\u{AD}®¯°±²³´µ¶·¸¹º»¼½¾¿ÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÐÑÒÓÔÕÖ×ØÙÚÛÜÝÞßàáâãäåæçèéêëìíîïðñòóôõö÷øùúûüýþÿ"))
    }
}
