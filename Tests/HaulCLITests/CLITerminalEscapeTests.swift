import HaulTestSupport
import Testing

/// Strings a server controls reach the user's terminal only with their control characters made
/// visible: a Location header cannot retitle the window or clear the screen.
@Suite("haul terminal escapes")
struct CLITerminalEscapeTests {
    /// Retitles the terminal window, then clears the screen.
    static let hostile = "\u{1B}]0;pwned\u{07}\u{1B}[2J"

    @Test func redirectLocationWithEscapeSequencesIsShownEscaped() throws {
        // GIVEN a redirect whose Location is an unusable target carrying terminal escape sequences
        let server = try FaultServer()
        server.setResource("/go", body: [])
        server.setPersistentFaults("/go", [.redirect(status: 302, location: "gopher://evil/" + Self.hostile + "x")])
        let directory = try TemporaryDirectory()
        // WHEN haul follows it (normal output, the mode a person at a terminal sees)
        let result = try HaulBinary.run(["--retry", "0", "-o", directory.file("x"), server.url("/go")])
        // THEN it refuses the redirect and names the location, but with no ESC byte reaching stderr:
        // the sequences are spelled out instead
        #expect(result.status == 9, "stderr: \(result.stderr)")
        #expect(!result.stderr.utf8.contains(0x1B), "raw ESC on stderr: \(result.stderr.debugDescription)")
        #expect(!result.stderr.utf8.contains(0x07), "raw BEL on stderr: \(result.stderr.debugDescription)")
        #expect(result.stderr.contains(#"\u{1B}]0;pwned\u{07}\u{1B}[2J"#), "stderr: \(result.stderr.debugDescription)")
    }

    @Test func usageErrorQuotingAnArgumentEscapesIt() throws {
        // GIVEN a URL argument carrying a screen-clear sequence and a carriage return
        // WHEN haul refuses it
        let result = try HaulBinary.run(["-o", "/dev/null", "ftp://host/\u{1B}[2J\rfake"])
        // THEN the usage message quotes it with the controls escaped, and keeps its own line break
        #expect(result.status == 2, "stderr: \(result.stderr)")
        #expect(!result.stderr.utf8.contains(0x1B))
        #expect(!result.stderr.utf8.contains(0x0D))
        #expect(result.stderr.contains(#"\u{1B}[2J\u{0D}fake"#), "stderr: \(result.stderr.debugDescription)")
        #expect(result.stderr.contains("\nTry 'haul --help'"))
    }
}
