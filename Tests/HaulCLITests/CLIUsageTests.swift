import HaulTestSupport
import Testing

/// The command line itself: help, version and usage errors (exit code 2), no network needed.
@Suite("haul command line")
struct CLIUsageTests {
    @Test func helpListsEveryFlagAndExitCode() throws {
        // GIVEN the built binary
        // WHEN it is asked for help
        let result = try HaulBinary.run(["--help"])
        // THEN it succeeds and documents every option and every exit code
        #expect(result.status == 0)
        let help = result.stdoutString
        #expect(help.contains("Usage: haul"))
        for flag in [
            "-o, --output", "-d, --dir", "-c, --continue", "--force", "-r, --range", "-X, --request",
            "-H, --header", "--data", "--max-redirects", "--connect-timeout", "--stall-timeout", "--retry",
            "--retry-wait", "--limit-rate", "--insecure", "--cacert", "-q, --quiet", "--json", "-h, --help",
            "-V, --version",
        ] {
            #expect(help.contains(flag), "help does not mention \(flag)")
        }
        #expect(help.contains("Exit codes:"))
        let codeLines = help.split(separator: "\n").filter { $0.hasPrefix("  ") && $0.dropFirst(2).first?.isNumber == true }
        for code in ["0", "1", "2", "3", "4", "5", "6", "7", "9", "130"] {
            #expect(codeLines.contains { $0.dropFirst(2).hasPrefix(code + " ") }, "help does not list exit code \(code)")
        }
        #expect(help.contains("143"))
    }

    @Test func shortHelpFlagWorksToo() throws {
        // GIVEN the binary WHEN run with -h THEN it prints the same usage and exits 0
        let result = try HaulBinary.run(["-h"])
        #expect(result.status == 0)
        #expect(result.stdoutString.contains("Exit codes:"))
    }

    @Test func versionPrintsNameAndVersion() throws {
        // GIVEN the binary
        // WHEN run with --version and with -V
        for flag in ["--version", "-V"] {
            let result = try HaulBinary.run([flag])
            // THEN it prints "haul X.Y.Z" and exits 0
            #expect(result.status == 0)
            let text = result.stdoutString.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(text.range(of: #"^haul [0-9]+\.[0-9]+\.[0-9]+"#, options: .regularExpression) != nil, "got \(text)")
        }
    }

    @Test func noURLIsAUsageError() throws {
        // GIVEN no arguments WHEN haul runs THEN it exits 2 and says why on stderr, with nothing on stdout
        let result = try HaulBinary.run([])
        #expect(result.status == 2)
        #expect(result.stderr.contains("no URL"))
        #expect(result.stdout.isEmpty)
    }

    @Test func twoURLsWithOneOutputFileAreAUsageError() throws {
        // GIVEN two URLs (a batch) and -o naming a single file
        let directory = try TemporaryDirectory()
        // WHEN haul runs
        let result = try HaulBinary.run(
            ["-o", directory.file("out"), "--state", directory.file("state"), "http://127.0.0.1:1/a", "http://127.0.0.1:1/b"])
        // THEN it exits 2, says -o cannot name several downloads, and creates nothing
        #expect(result.status == 2)
        #expect(result.stderr.contains("-o"), "stderr: \(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(!Disk.exists(directory.file("out")))
        #expect(!Disk.exists(directory.file("state")))
    }

    @Test(arguments: [["--bogus", "http://127.0.0.1:1/x"], ["-Z", "http://127.0.0.1:1/x"], ["--quiet=yes", "http://127.0.0.1:1/x"]])
    func unknownOrMalformedOptionIsAUsageError(arguments: [String]) throws {
        // GIVEN an option haul does not know (or a flag given a value)
        // WHEN haul runs
        let result = try HaulBinary.run(arguments)
        // THEN it exits 2 and names the problem on stderr
        #expect(result.status == 2)
        #expect(result.stderr.contains("haul:"), "stderr: \(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test func unknownOptionIsNamedOnStderr() throws {
        // GIVEN --bogus WHEN haul runs THEN stderr names --bogus and points at --help
        let result = try HaulBinary.run(["--bogus", "http://127.0.0.1:1/x"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("--bogus"))
        #expect(result.stderr.contains("--help"))
    }

    @Test(arguments: ["ftp://127.0.0.1/file", "garbage", "http://", "file:///etc/passwd", "://nohost", ""])
    func nonHTTPURLIsAUsageError(url: String) throws {
        // GIVEN a URL that is not http(s) with a host
        // WHEN haul runs
        let result = try HaulBinary.run(["--retry", "0", url])
        // THEN it exits 2 before any network activity
        #expect(result.status == 2, "url \(url): stderr \(result.stderr)")
        #expect(!result.stderr.isEmpty)
    }

    @Test(arguments: ["abc", "5-2", "-", "1-2-3", "x-"])
    func badRangeIsAUsageError(range: String) throws {
        // GIVEN a --range value that is not a byte range
        // WHEN haul runs
        let result = try HaulBinary.run(["--range", range, "http://127.0.0.1:1/x"])
        // THEN it exits 2 and mentions --range
        #expect(result.status == 2, "range \(range): stderr \(result.stderr)")
        #expect(result.stderr.contains("--range"), "range \(range): stderr \(result.stderr)")
    }

    @Test func outputAndDirTogetherAreAUsageError() throws {
        // GIVEN both -o and -d WHEN haul runs THEN it exits 2 and creates nothing
        let directory = try TemporaryDirectory()
        let result = try HaulBinary.run(["-o", directory.file("out"), "-d", directory.file("dir"), "http://127.0.0.1:1/x"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("-o") && result.stderr.contains("-d"))
        #expect(!Disk.exists(directory.file("out")))
        #expect(!Disk.exists(directory.file("dir")))
    }

    @Test func jsonWithStandardOutputIsAUsageError() throws {
        // GIVEN --json and -o - (both want stdout) WHEN haul runs THEN it exits 2
        let result = try HaulBinary.run(["--json", "-o", "-", "http://127.0.0.1:1/x"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("--json"))
        #expect(result.stdout.isEmpty)
    }

    @Test(arguments: [
        ["--force", "-c"], ["--retry", "-1"], ["--retry", "many"], ["--retry-wait", "0"], ["--limit-rate", "fast"],
        ["-H", "NoColon"], ["-H", "Range: bytes=0-1"], ["-X", "GE T"], ["--data", "@/nonexistent/haul-body"],
        ["--output", ""], ["--retry", "1", "--retry", "2"],
    ])
    func invalidValuesAreUsageErrors(options: [String]) throws {
        // GIVEN an option with a value haul must refuse
        // WHEN haul runs
        let result = try HaulBinary.run(options + ["http://127.0.0.1:1/x"])
        // THEN it exits 2 with a message
        #expect(result.status == 2, "options \(options): stderr \(result.stderr)")
        #expect(result.stderr.contains("haul:"))
    }

    @Test func optionNeedingAValueAtTheEndIsAUsageError() throws {
        // GIVEN -o as the last argument WHEN haul runs THEN it exits 2
        let result = try HaulBinary.run(["http://127.0.0.1:1/x", "-o"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("needs a value"))
    }
}
