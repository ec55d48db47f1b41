import Foundation
import Testing

@testable import HaulCore

@Suite("FileNameSanitizer")
struct FileNameSanitizerTests {
    @Test(
        "GIVEN ordinary names WHEN sanitized THEN they are unchanged",
        arguments: ["report.pdf", "annual report 2024.tar.gz", "naïve €.txt", "日本語.txt", "a", "x.y.z", "👍🏽.png"])
    func keepsOrdinaryNames(name: String) {
        #expect(FileNameSanitizer.sanitize(name) == name)
    }

    @Test(
        "GIVEN hostile names WHEN sanitized THEN only a safe last component remains",
        arguments: [
            ("../../etc/passwd", "passwd"),
            ("/etc/passwd", "passwd"),
            ("..\\..\\x", "x"),
            ("a/../b", "b"),
            ("C:\\Windows\\system32\\evil.dll", "evil.dll"),
            ("dir/", "dir"),
            ("\u{0}x", "x"),
            ("con\nfoo", "confoo"),
            ("a\u{7F}b\u{85}c\u{9F}d", "abcd"),
            ("a\tb\rc", "abc"),
            (".bashrc", "bashrc"),
            ("..hidden", "hidden"),
            (". .x", "x"),
            ("  padded.txt  ", "padded.txt"),
            ("trailing.dots...", "trailing.dots"),
            ("trailing. . .", "trailing"),
            ("what?<is>this:*|\".txt", "what__is_this____.txt"),
            ("evil\u{202E}gpj.exe", "evilgpj.exe"),
            ("zero\u{200B}width\u{FEFF}", "zerowidth"),
            ("line\u{2028}break", "linebreak"),
            ("bad\u{FFFF}char", "badchar"),
        ])
    func sanitizesHostileNames(raw: String, expected: String) {
        #expect(FileNameSanitizer.sanitize(raw) == expected)
    }

    @Test("GIVEN an emoji joined by U+200D WHEN sanitized THEN the joiners go, like every Cf character")
    func dropsZeroWidthJoiner() {
        // A deliberate cost of the blanket Cf rule: the family emoji falls apart into its members.
        #expect(FileNameSanitizer.sanitize("👨\u{200D}👩\u{200D}👧.png") == "👨👩👧.png")
    }

    @Test(
        "GIVEN names with nothing usable WHEN sanitized THEN the result is nil",
        arguments: [
            "", " ", ".", "..", "....", ". . .", "/", "///", "\\\\", "/\\/\\", "a/..", "../",
            "\u{0}", "\u{0}\u{1}\u{2}", "\u{202E}", "\n\n", "\u{3000}", ". \u{0} .", "x/\u{200F}",
        ])
    func refusesUnusable(raw: String) {
        #expect(FileNameSanitizer.sanitize(raw) == nil)
    }

    @Test(
        "GIVEN any output WHEN inspected THEN it never has separators, controls or leading dots",
        arguments: ["../../etc/passwd", "..\\..\\x", "a\u{0}/b\u{1}", ".\u{202E}.x", "%2e%2e%2f", "~/.ssh/id_rsa"])
    func outputInvariants(raw: String) throws {
        let name = try #require(FileNameSanitizer.sanitize(raw))
        #expect(!name.contains("/") && !name.contains("\\"))
        #expect(!name.hasPrefix("."))
        #expect(name.unicodeScalars.allSatisfy { $0.properties.generalCategory != .control })
    }

    @Test("GIVEN a 1000-character name WHEN sanitized THEN it fits 255 bytes and keeps its extension")
    func truncatesLongName() throws {
        let name = try #require(FileNameSanitizer.sanitize(String(repeating: "a", count: 1_000) + ".txt"))
        #expect(name.utf8.count == 255)
        #expect(name.hasSuffix("aaa.txt"))
    }

    @Test("GIVEN a long name of multi-byte characters WHEN sanitized THEN no character is split")
    func truncatesOnCharacterBoundary() throws {
        let raw = String(repeating: "€", count: 1_000) + ".pdf"  // 3 bytes per euro sign
        let name = try #require(FileNameSanitizer.sanitize(raw))
        #expect(name.utf8.count <= 255)
        #expect(name.utf8.count == 4 + 3 * 83)
        #expect(name.hasSuffix("€.pdf"))
        #expect(String(validating: Array(name.utf8), as: UTF8.self) == name)
    }

    @Test("GIVEN a long name whose extension is itself long WHEN sanitized THEN it is simply cut")
    func truncatesLongExtension() throws {
        let raw = "stem." + String(repeating: "e", count: 1_000)
        let name = try #require(FileNameSanitizer.sanitize(raw))
        #expect(name.utf8.count == 255)
        #expect(name.hasPrefix("stem.eee"))
    }

    @Test("GIVEN one huge grapheme cluster WHEN sanitized THEN it is cut between scalars, not dropped")
    func truncatesHugeGrapheme() throws {
        let raw = "e" + String(repeating: "\u{301}", count: 1_000)
        let name = try #require(FileNameSanitizer.sanitize(raw))
        #expect(name.utf8.count <= 255)
        #expect(name.unicodeScalars.first == "e")
    }

    @Test("GIVEN a truncation that would end in a dot WHEN sanitized THEN the trailing dot is trimmed")
    func trimsAfterTruncation() throws {
        let raw = String(repeating: "a", count: 254) + ". tail-without-extension-because-too-long"
        let name = try #require(FileNameSanitizer.sanitize(raw))
        #expect(name == String(repeating: "a", count: 254))
    }

    // MARK: - destinationName

    private let url = URL(string: "https://example.com/files/archive.tar.gz?token=1#frag")!

    @Test("GIVEN a usable Content-Disposition WHEN naming THEN it wins over the URL")
    func prefersContentDisposition() {
        let name = FileNameSanitizer.destinationName(
            contentDisposition: "attachment; filename=\"report.pdf\"", url: url)
        #expect(name == "report.pdf")
    }

    @Test(
        "GIVEN a hostile Content-Disposition WHEN naming THEN it is sanitized",
        arguments: [
            ("attachment; filename=\"../../etc/passwd\"", "passwd"),
            ("attachment; filename*=UTF-8''%2e%2e%2fevil", "evil"),
            ("attachment; filename*=UTF-8''%2e%2e%2f%2e%2e; filename=\"ok.txt\"", "archive.tar.gz"),
            ("attachment; filename=\"x\u{202E}fdp.exe\"", "xfdp.exe"),
        ])
    func sanitizesContentDisposition(header: String, expected: String) {
        #expect(FileNameSanitizer.destinationName(contentDisposition: header, url: url) == expected)
    }

    @Test(
        "GIVEN no or an unusable Content-Disposition WHEN naming THEN the URL's last segment is used",
        arguments: [nil, "attachment", "attachment; filename=\"..\"", "attachment; filename=\"/\""])
    func usesURL(header: String?) {
        #expect(FileNameSanitizer.destinationName(contentDisposition: header, url: url) == "archive.tar.gz")
    }

    @Test(
        "GIVEN URLs of various shapes WHEN naming THEN the decoded last non-empty segment is used",
        arguments: [
            ("https://example.com/a/b/", "b"),
            ("https://example.com/my%20file.zip", "my file.zip"),
            ("https://example.com/%E2%82%AC.txt", "€.txt"),
            ("https://example.com/dir/..%2F..%2Fetc%2Fpasswd", "passwd"),
            ("https://example.com/a/%2e%2e%2fsecret", "secret"),
            ("https://example.com/%2e%2e%2f", "download"),
            ("https://example.com/%2e%2e", "download"),
            ("https://example.com/", "download"),
            ("https://example.com", "download"),
            ("https://example.com//", "download"),
            ("https://example.com/%00", "download"),
            ("https://example.com/.env", "env"),
        ])
    func namesFromURL(text: String, expected: String) throws {
        let url = try #require(URL(string: text))
        #expect(FileNameSanitizer.destinationName(contentDisposition: nil, url: url) == expected)
    }

    @Test("GIVEN nothing usable anywhere WHEN naming THEN the fallback is used, sanitized itself")
    func usesFallback() throws {
        let url = try #require(URL(string: "https://example.com/"))
        #expect(
            FileNameSanitizer.destinationName(contentDisposition: nil, url: url, fallback: "index.html")
                == "index.html")
        #expect(FileNameSanitizer.destinationName(contentDisposition: nil, url: url, fallback: "../x") == "x")
        #expect(FileNameSanitizer.destinationName(contentDisposition: nil, url: url, fallback: "..") == "download")
    }
}

@Suite("FileNameSanitizer and grapheme clusters")
struct FileNameSanitizerClusterTests {
    @Test func prependedMarksCannotHideASeparator() {
        // GIVEN U+06DD, which forms one Character with the "/" after it
        let hostile = "\u{6DD}/..\u{6DD}/escaped.bin"
        // WHEN sanitized THEN only the last component survives, with no separator in it
        let name = FileNameSanitizer.sanitize(hostile)
        #expect(name == "escaped.bin")
        #expect(FileNameSanitizer.sanitize("a\u{6DD}/b") == "b")
        #expect(!(name ?? "/").unicodeScalars.contains("/"))
    }
}
