import Foundation
import HaulTestSupport
import Testing

/// Every text that leaves Haul, libcurl's error text included, is redacted for every credential
/// Haul knows: on stderr, in `--json`, in `queue list` and in the store's `last_error`.
@Suite("Secrets never leave in error text", .serialized)
struct CLISecretRedactionTests {
    static let secret = "S3cr@tPw"

    /// The places a failed download's message goes, for one failing command line.
    static func leaks(_ arguments: [String], environment: [String: String] = [:], engine: String = "curl") throws -> [String] {
        let work = try TemporaryDirectory(prefix: "haul-redact")
        let state = work.file("state")
        var found: [String] = []
        let direct = try CLIProxyTests.haul(
            ["--json", "--engine", engine, "--retry", "0", "-o", work.file("a.bin")] + arguments, environment: environment)
        #expect(direct.status != 0, "the download was meant to fail: \(direct.stderr)")
        if direct.stderr.contains(secret) { found.append("stderr: \(direct.stderr)") }
        if direct.stdoutString.contains(secret) { found.append("--json: \(direct.stdoutString)") }
        let added = try CLIProxyTests.haul(
            ["queue", "add", "--state", state, "-o", work.file("b.bin")] + arguments.filter { $0 != "--json" }, environment: environment)
        #expect(added.status == 0, "\(added.stderr)")
        let run = try CLIProxyTests.haul(["queue", "run", "-q", "--retry", "0", "--engine", engine, "--state", state], environment: environment)
        if run.stderr.contains(secret) { found.append("queue run: \(run.stderr)") }
        for listing in [["queue", "list", "--state", state], ["queue", "list", "--json", "--state", state]] {
            let listed = try CLIProxyTests.haul(listing, environment: environment)
            if listed.stdoutString.contains(secret) || listed.stderr.contains(secret) { found.append("\(listing): \(listed.stdoutString)") }
        }
        // A failed item keeps what its resume needs; cancelled, it keeps no secret, its error text included
        let cancelled = try CLIProxyTests.haul(["queue", "cancel", "--state", state, "1"], environment: environment)
        #expect(cancelled.status == 0, "\(cancelled.stderr)")
        for name in ["haul.sqlite", "haul.sqlite-wal"] {
            if let bytes = FileManager.default.contents(atPath: state + "/" + name), bytes.range(of: Data(secret.utf8)) != nil {
                found.append("\(name) holds it")
            }
        }
        return found
    }

    @Test(.timeLimit(.minutes(2)))
    func aProxyPasswordWithAnUnencodedAtSignIsRedacted() throws {
        // GIVEN --proxy with a password that holds an unencoded '@' (libcurl echoes such a URL)
        let leaks = try Self.leaks(["--proxy", "http://alice:\(Self.secret)@127.0.0.1:9", "http://127.0.0.1:9/f.bin"])
        // THEN no output and no stored text holds the password
        #expect(leaks.isEmpty, "\(leaks)")
    }

    @Test(.timeLimit(.minutes(2)), arguments: ["curl", "urlsession"])
    func anEnvironmentProxyWithAnUnusableSchemeIsRedacted(engine: String) throws {
        // GIVEN an environment proxy with a scheme libcurl does not take
        let leaks = try Self.leaks(["http://127.0.0.1:9/f.bin"], environment: ["http_proxy": "ftp://alice:\(Self.secret)@127.0.0.1:9"], engine: engine)
        #expect(leaks.isEmpty, "\(leaks)")
    }
}
