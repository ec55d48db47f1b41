import Foundation
import HaulTestSupport
import Testing

@testable import HaulCore

/// `AbsolutePath.name(of:)` and `joining(_:_:)` against NSString over generated paths: every mix
/// of empty, ".", "..", repeated and trailing slashes, non-ASCII and 255-byte names.
@Suite("AbsolutePath.name and joining, generated")
struct PathNameGeneratedTests {
    /// Components a user or a server can give, none starting with a combining mark (where the two
    /// are meant to differ: see `nameSplitsAtTheSlashByte`).
    private static let components = [
        "a", "é", "e\u{301}", ".", "..", "...", ".haul-0123.haul-partial", "a b", "東京", "🚀", "\u{202E}gpj.exe", "~", "\\", ":",
        String(repeating: "x", count: 255), String(repeating: "é", count: 127) + "x", "\u{FFFD}", "a\u{0}b",
    ]

    private static func path(_ random: inout WordGenerator) -> String {
        let separators = ["/", "//", "///"]
        var text = Bool.random(using: &random) ? "/" : ""
        for index in 0..<Int.random(in: 0...4, using: &random) {
            if index > 0 { text += separators.randomElement(using: &random)! }
            text += components.randomElement(using: &random)!
        }
        if Int.random(in: 0..<4, using: &random) == 0 { text += separators.randomElement(using: &random)! }
        return text
    }

    /// The last non-empty name between "/" bytes; "/" for a path of slashes only, "" for "" and "//".
    private static func lastName(_ path: String) -> String {
        if let last = path.split(separator: "/").last { return String(last) }
        return path == "/" ? "/" : ""
    }

    @Test("GIVEN 20,000 generated paths WHEN named THEN each as NSString's lastPathComponent names it")
    func nameAgreesWithNSString() {
        var random = WordGenerator(seed: 38)
        var disagreements: [String] = []
        for _ in 0..<20_000 {
            let path = Self.path(&random)
            let name = AbsolutePath.name(of: path)
            // Foundation on Linux traps in lastPathComponent on many paths with a "//" ("/a//é",
            // "a///b//", "東京///.//": UnsafeBufferPointer out of range; see `foundationTraps`):
            // those are checked against the last name split at "/" bytes instead.
            let traps = path.contains("//")
            let expected = traps ? Self.lastName(path) : (path as NSString).lastPathComponent
            if name != expected { disagreements.append(path) }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(5).map { $0.debugDescription })")
    }

    @Test("GIVEN 20,000 generated directories and names WHEN joined THEN each as NSString's appendingPathComponent joins it")
    func joiningAgreesWithNSString() {
        var random = WordGenerator(seed: 83)
        var disagreements: [String] = []
        for _ in 0..<20_000 {
            let directory = Self.path(&random)
            let name = Bool.random(using: &random) ? Self.components.randomElement(using: &random)! : ""
            let ours = AbsolutePath.joining(directory, name)
            let theirs = (directory as NSString).appendingPathComponent(name)
            if ours != theirs {
                disagreements.append("\(directory.debugDescription) + \(name.debugDescription): \(ours.debugDescription) vs \(theirs.debugDescription)")
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(5))")
    }

    @Test("GIVEN names starting with a combining mark WHEN named or joined THEN split and joined at the slash byte")
    func combiningMarksAtTheSlashByte() {
        #expect(AbsolutePath.name(of: "/d/\u{301}x/") == "\u{301}x")
        #expect(AbsolutePath.name(of: "\u{301}") == "\u{301}")
        #expect(AbsolutePath.joining("/d", "\u{301}x") == "/d/\u{301}x")
        #expect(AbsolutePath.joining("/", "\u{301}x") == "/\u{301}x")
        #expect(Array(AbsolutePath.joining("/d", "\u{301}x").utf8) == Array("/d/".utf8) + Array("\u{301}x".utf8))
    }

    @Test("GIVEN paths on which Foundation's lastPathComponent traps on Linux WHEN named THEN their last name, no trap")
    func foundationTraps() {
        // (path as NSString).lastPathComponent (and deletingLastPathComponent) stop the process
        // on each of these with swift-corelibs-foundation 6.3.1: an index past a buffer's end.
        let cases = ["a///b//": "b", "/a//é": "é", "a//é": "é", "東京///.//": ".", "/~//..//🚀///": "🚀"]
        for (path, name) in cases { #expect(AbsolutePath.name(of: path) == name, "\(path)") }
    }
}
