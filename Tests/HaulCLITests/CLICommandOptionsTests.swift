import Foundation
import HaulTestSupport
import Testing

/// Each command accepts only its own options: an option that belongs to another command is
/// refused (exit 2, naming the option, the command and where it belongs) instead of being parsed
/// and silently ignored; the options a command does take still work; each command's `--help`
/// lists only its options.
@Suite("haul commands take only their own options", .serialized)
struct CLICommandOptionsTests {
    /// An option given to a command it does not belong to.
    struct Misplaced: Sendable, CustomTestStringConvertible {
        /// The arguments after `haul` (the state directory is added by the test).
        let arguments: [String]
        /// The option as the user typed it.
        let option: String
        /// The command as the message names it.
        let command: String
        /// A command the message says the option belongs to.
        let owner: String

        var testDescription: String { arguments.joined(separator: " ") }
    }

    static let misplaced: [Misplaced] = [
        Misplaced(
            arguments: ["queue", "run", "--checksum", "sha256=" + String(repeating: "0", count: 64)],
            option: "--checksum", command: "haul queue run", owner: "haul URL"),
        Misplaced(arguments: ["queue", "run", "--range", "0-9"], option: "--range", command: "haul queue run", owner: "haul queue add"),
        Misplaced(arguments: ["queue", "run", "-H", "X: y"], option: "-H", command: "haul queue run", owner: "haul queue add"),
        Misplaced(arguments: ["queue", "list", "-o", "x"], option: "-o", command: "haul queue list", owner: "haul queue add"),
        Misplaced(arguments: ["queue", "pause", "1", "--priority", "3"], option: "--priority", command: "haul queue pause", owner: "haul queue add"),
        Misplaced(arguments: ["queue", "rm", "1", "--data", "x"], option: "--data", command: "haul queue rm", owner: "haul queue add"),
        Misplaced(arguments: ["queue", "add", "http://127.0.0.1:1/x", "-j", "2"], option: "-j", command: "haul queue add", owner: "haul queue run"),
        Misplaced(arguments: ["queue", "cancel", "1", "--json"], option: "--json", command: "haul queue cancel", owner: "haul queue list"),
        Misplaced(arguments: ["queue", "add", "http://127.0.0.1:1/x", "--retry", "2"], option: "--retry", command: "haul queue add", owner: "haul queue run"),
        Misplaced(arguments: ["queue", "run", "--max-size", "1k"], option: "--max-size", command: "haul queue run", owner: "haul queue add"),
        Misplaced(arguments: ["queue", "run", "--insecure"], option: "--insecure", command: "haul queue run", owner: "haul queue add"),
        Misplaced(arguments: ["queue", "list", "-q"], option: "-q", command: "haul queue list", owner: "haul queue run"),
        Misplaced(arguments: ["queue", "-j", "2", "run"], option: "-j", command: "haul queue", owner: "haul queue run"),
        Misplaced(arguments: ["--priority", "3", "http://127.0.0.1:1/x"], option: "--priority", command: "haul URL", owner: "haul queue add"),
        Misplaced(arguments: ["--delete", "http://127.0.0.1:1/x"], option: "--delete", command: "haul URL", owner: "haul queue cancel"),
    ]

    @Test(arguments: misplaced)
    func anOptionOfAnotherCommandIsRefused(_ testCase: Misplaced) throws {
        // GIVEN a state directory that does not exist yet
        let scratch = try TemporaryDirectory(prefix: "haul-cli-options")
        let state = scratch.file("state")
        // WHEN a command is given an option that belongs to another command
        let result = try HaulBinary.run(testCase.arguments + ["--state", state])
        // THEN it exits 2, the message names the option, the command and where the option belongs
        #expect(result.status == 2, "stderr: \(result.stderr)")
        #expect(result.stderr.contains(testCase.option), "stderr: \(result.stderr)")
        #expect(result.stderr.contains("'\(testCase.command)'"), "stderr: \(result.stderr)")
        #expect(result.stderr.contains("'\(testCase.owner)'"), "stderr: \(result.stderr)")
        #expect(result.stdout.isEmpty)
        // AND nothing was done: the store was not even created
        #expect(!Disk.exists(state))
    }

    // MARK: the options a command takes still work

    @Test(.timeLimit(.minutes(1)))
    func queueRunTakesJobsJSONAndTheRunWideSettings() throws {
        // GIVEN two queued downloads
        let server = try FaultServer()
        let bodies = (0..<2).map { TestData.bytes(count: 40_000 + $0 * 3_000, seed: 700 + UInt64($0)) }
        for (index, body) in bodies.enumerated() { server.setResource("/r\(index).bin", body: body) }
        let store = try StoreFixture()
        let out = try TemporaryDirectory(prefix: "haul-cli-out")
        let add = try store.haul(["add", server.url("/r0.bin"), server.url("/r1.bin"), "-d", out.path])
        #expect(add.status == 0, "stderr: \(add.stderr)")
        let ids = StoreFixture.ids(add)
        try #require(ids.count == 2)

        // WHEN the queue runs with -j 2 --json and every setting a run applies to its items
        let run = try store.haul([
            "run", "-j", "2", "--json", "--retry", "0", "--retry-wait", "1", "--connect-timeout", "5", "--stall-timeout", "5",
            "-x", "1", "--limit-rate", "50M",
        ])

        // THEN it succeeds, reports each download as JSON and completes both bit-exact
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let objects = JSONLines.parse(run.stdoutString)
        for id in ids {
            #expect(
                objects.contains { $0["event"] as? String == "completed" && ($0["id"] as? NSNumber)?.int64Value == id },
                "no completed event for \(id): \(run.stdoutString)")
        }
        #expect(Disk.difference(out.file("r0.bin"), bodies[0]) == nil)
        #expect(Disk.difference(out.file("r1.bin"), bodies[1]) == nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func queueRunAppliesItsRetriesToEveryItem() throws {
        // GIVEN a queued download whose first response is cut after 1,000 bytes
        let server = try FaultServer()
        let body = TestData.bytes(count: 40_000, seed: 710)
        server.setResource("/cut.bin", body: body)
        server.enqueueFaults("/cut.bin", [.dropAfter(bytes: 1_000)])
        let store = try StoreFixture()
        let out = try TemporaryDirectory(prefix: "haul-cli-out")
        let id = try #require(StoreFixture.ids(try store.haul(["add", server.url("/cut.bin"), "-o", out.file("cut.bin")])).first)

        // WHEN the queue runs with --retry 0
        let noRetry = try store.haul(["run", "-q", "--retry", "0"])
        // THEN the drop fails the item at once (exit 3), after a single request
        #expect(noRetry.status == 3, "stderr: \(noRetry.stderr)")
        #expect(server.requests.filter { $0.path == "/cut.bin" }.count == 1)

        // WHEN it is resumed, cut again, and the queue runs with --retry 1 --retry-wait 0.1
        server.enqueueFaults("/cut.bin", [.dropAfter(bytes: 1_000)])
        #expect(try store.haul(["resume", String(id)]).status == 0)
        let oneRetry = try store.haul(["run", "-q", "--retry", "1", "--retry-wait", "0.1"])
        // THEN the retry completes the file
        #expect(oneRetry.status == 0, "stderr: \(oneRetry.stderr)")
        #expect(Disk.difference(out.file("cut.bin"), body) == nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func queueAddKeepsTheRequestItShapes() throws {
        // GIVEN a server
        let server = try FaultServer()
        let body = TestData.bytes(count: 30_000, seed: 720)
        server.setResource("/part.bin", body: body)
        let store = try StoreFixture()
        let out = try TemporaryDirectory(prefix: "haul-cli-out")
        // WHEN a download is added with a header, a range, a priority and paused, then resumed and run
        let add = try store.haul([
            "add", server.url("/part.bin"), "-o", out.file("part.bin"), "-H", "X-Haul-Test: yes",
            "--range", "0-9", "--priority", "5", "--paused",
        ])
        #expect(add.status == 0, "stderr: \(add.stderr)")
        let id = try #require(StoreFixture.ids(add).first)
        let listed = try store.items()
        #expect(listed.state(id) == "paused")
        #expect(listed.int(id, "priority") == 5)
        #expect(try store.haul(["resume", String(id)]).status == 0)
        let run = try store.haul(["run", "-q", "--retry", "0"])
        // THEN the run sends the header and the range, and writes those ten bytes
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let request = try #require(server.requests.first { $0.path == "/part.bin" })
        #expect(request.header("X-Haul-Test") == "yes")
        #expect(request.header("Range") == "bytes=0-9")
        #expect(Disk.bytes(out.file("part.bin")) == Array(body[0..<10]))
    }

    @Test func queueAddSharesTheOutputRuleWithTheMainCommand() throws {
        // GIVEN a state directory that does not exist yet
        let scratch = try TemporaryDirectory(prefix: "haul-cli-options")
        let state = scratch.file("state")
        // WHEN queue add gets both -o and -d, or -o with two URLs
        let both = try HaulBinary.run(["queue", "add", "http://127.0.0.1:1/a", "-o", scratch.file("a"), "-d", scratch.path, "--state", state])
        let two = try HaulBinary.run(["queue", "add", "http://127.0.0.1:1/a", "http://127.0.0.1:1/b", "-o", scratch.file("a"), "--state", state])
        // THEN each is a usage error naming the options, before the store is opened
        #expect(both.status == 2, "stderr: \(both.stderr)")
        #expect(both.stderr.contains("-o") && both.stderr.contains("-d"), "stderr: \(both.stderr)")
        #expect(two.status == 2, "stderr: \(two.stderr)")
        #expect(two.stderr.contains("-o names one file"), "stderr: \(two.stderr)")
        #expect(!Disk.exists(state))
    }

    // MARK: help

    /// A command's `--help` and what it must and must not list.
    struct HelpCase: Sendable, CustomTestStringConvertible {
        let arguments: [String]
        let lists: [String]
        let omits: [String]
        var testDescription: String { arguments.joined(separator: " ") }
    }

    static let helpCases: [HelpCase] = [
        HelpCase(
            arguments: ["queue", "run", "--help"],
            lists: [
                "Usage: haul queue run", "-j, --jobs", "--state", "-q, --quiet", "--json", "--limit-rate", "--retry", "--retry-wait",
                "--connect-timeout", "--stall-timeout", "-x, --connections",
            ],
            omits: [
                "--checksum", "-r, --range", "-H, --header", "--data", "-o, --output", "-d, --dir", "--force", "--priority", "--delete",
                "--insecure", "--cacert", "--max-size", "--max-redirects", "--min-free-space",
            ]),
        HelpCase(
            arguments: ["queue", "add", "--help"],
            lists: [
                "Usage: haul queue add", "-o, --output", "-d, --dir", "--priority", "--paused", "-H, --header", "-r, --range",
                "-X, --request", "--data", "--force", "-c, --continue", "--state", "--checksum", "--min-free-space", "--max-size",
                "--insecure", "--cacert", "--max-redirects", "--allow-http-redirect", "-x, --connections",
            ],
            omits: ["-j, --jobs", "--json", "-q, --quiet", "--retry", "--limit-rate", "--connect-timeout", "--delete"]),
        HelpCase(
            arguments: ["queue", "list", "--help"],
            lists: ["Usage: haul queue list", "--json", "--state"],
            omits: ["-q, --quiet", "-o, --output", "-j, --jobs", "--retry", "--priority"]),
        HelpCase(
            arguments: ["queue", "pause", "--help"], lists: ["Usage: haul queue pause", "--state"], omits: ["--delete", "--priority", "--json", "--retry"]),
        HelpCase(arguments: ["queue", "resume", "-h"], lists: ["Usage: haul queue resume", "--state"], omits: ["--delete", "--priority", "--json"]),
        HelpCase(
            arguments: ["queue", "cancel", "--help"], lists: ["Usage: haul queue cancel", "--delete", "--state"], omits: ["--priority", "--json", "--range"]),
        HelpCase(arguments: ["queue", "rm", "--help"], lists: ["Usage: haul queue rm", "--state"], omits: ["--delete", "--priority", "--json"]),
        HelpCase(
            arguments: ["queue", "--help"],
            lists: ["add", "list", "pause", "resume", "cancel", "rm", "run", "haul queue ACTION --help"],
            omits: ["--checksum", "--priority"]),
        HelpCase(arguments: ["--help"], lists: ["Usage: haul", "--checksum", "-j, --jobs"], omits: ["--priority", "--delete", "--paused"]),
    ]

    @Test(arguments: helpCases)
    func eachCommandsHelpListsOnlyItsOptions(_ testCase: HelpCase) throws {
        // GIVEN the built binary WHEN a command is asked for help
        let result = try HaulBinary.run(testCase.arguments)
        // THEN it succeeds and lists its own options and none of the others
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let help = result.stdoutString
        // The options part (the exit codes below it mention --force and --max-size).
        let options = help.components(separatedBy: "Exit codes:").first ?? help
        for text in testCase.lists { #expect(help.contains(text), "help does not list \(text):\n\(help)") }
        for text in testCase.omits { #expect(!options.contains(text), "help lists \(text):\n\(help)") }
    }
}
