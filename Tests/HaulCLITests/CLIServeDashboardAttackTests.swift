import Foundation
import HaulTestSupport
import Testing

/// The dashboard's new actions under a hostile local process and a careless user, in a real
/// headless Chromium (`Tests/Browser/dashboard_attack.py`, which runs its own `haul serve`: one
/// step kills it with SIGKILL and starts it again on the same port).
@Suite("haul serve's dashboard under attack", .serialized)
struct CLIServeDashboardAttackTests {
    static func attack(_ steps: String, name: String) throws -> ProcessResult {
        let chromium = "/usr/bin/chromium"
        try #require(FileManager.default.isExecutableFile(atPath: chromium), "chromium is missing: apt-get install chromium (.ci/run does)")
        let python = try CLIServeClientTests.python()
        let work = try TemporaryDirectory(prefix: "haul-dashboard-" + name)
        let nginx = try ServedFiles.start(in: work, [("big.bin", 64 << 20, 61), ("small.bin", 40_000, 62)], limitRate: "1m")
        defer { nginx.stop() }
        let result = try ProcessRunner.run(
            python,
            [
                CLIServeClientTests.script("Tests/Browser/dashboard_attack.py"), "--haul", try HaulBinary.path(), "--work", work.path,
                "--slow-url", nginx.baseURL + "/limited/big.bin", "--small-url", nginx.baseURL + "/small.bin", "--steps", steps,
                "--chromium", chromium, "--timeout", "150",
            ], timeout: 200)
        if ProcessInfo.processInfo.environment["HAUL_ATTACK_VERBOSE"] != nil { print(result.stderr + result.stdoutString) }
        // Each step asked for ran to its end (not skipped).
        for step in steps.split(separator: ",") where result.status == 0 {
            #expect(result.stdoutString.contains("\"\(step)\""), "step \(step) did not run: \(result.stdoutString)")
        }
        return result
    }

    @Test(.timeLimit(.minutes(4)))
    func afterKill9AndARestartOnTheSamePortTheDashboardResumesItsLiveFiguresWithOneRowAndNoReconnectStorm() throws {
        // GIVEN the dashboard connected with the secret, a download running, its figures coming
        // from the event stream
        // WHEN haul serve is killed -9, stays down 8 s, and starts again on the same port
        let result = try Self.attack("restart", name: "restart")
        // THEN the page reconnects by itself and its figures move by the stream again, with one
        // row for the download, one EventSource open, and at most a handshake per 3 s while down
        #expect(result.status == 0, "\(result.stderr)\n\(result.stdoutString)")
    }

    @Test(.timeLimit(.minutes(4)))
    func theSecretIsInNoHistoryEntryNoLogAndNoRefererOfTheFileLink() throws {
        // GIVEN the dashboard connected with the secret WHEN a finished file is downloaded by its link
        let result = try Self.attack("secret", name: "secret")
        // THEN no history entry carries the secret or a token, haul serve printed neither, and the
        // file link's request had no Referer
        #expect(result.status == 0, "\(result.stderr)\n\(result.stdoutString)")
    }

    @Test(.timeLimit(.minutes(4)))
    func downloadOfAFileThatIsGoneKeepsThePageAndSaysWhy() throws {
        // GIVEN a complete download whose file was deleted on disk
        // WHEN Download is clicked
        let result = try Self.attack("gone", name: "gone")
        // THEN the dashboard stays (not replaced by the server's plain-text 410) and says why
        #expect(result.status == 0, "\(result.stderr)\n\(result.stdoutString)")
    }

    @Test(.timeLimit(.minutes(4)))
    func hostileNamesAndErrorsAreShownAsTextAndADoubleClickedConfirmationRemovesOnce() throws {
        // GIVEN errors carrying HTML, quotes, newlines, a right-to-left override and 10 KB, and a
        // file name with quotes and an attribute in it, and the server's directory (-d) with a
        // right-to-left override
        // WHEN they reach the move form, the add form, the delete confirmation and a row's
        // tooltip, and the confirmation is clicked twice
        let result = try Self.attack("hostile", name: "hostile")
        // THEN nothing is executed or inserted, the override is written out (⟨U+202E⟩) in the
        // error and the tooltip alike, and one removal is sent
        #expect(result.status == 0, "\(result.stderr)\n\(result.stdoutString)")
    }

    @Test(.timeLimit(.minutes(4)))
    func aRefusedEventStreamIsTriedAgainWithAGrowingWaitAndOpensOnceTheServerTakesIt() throws {
        // GIVEN the dashboard connected with its stream open
        // WHEN every request for the event stream is answered 503 (haul serve at its bound of
        // streams) for 7 s, then taken again
        let result = try Self.attack("refused", name: "refused")
        // THEN the page polls meanwhile, tries the stream again by itself two or three times (2 s,
        // then 4 s: no storm), and opens it with no reload, one EventSource live
        #expect(result.status == 0, "\(result.stderr)\n\(result.stdoutString)")
    }

    @Test(.timeLimit(.minutes(4)))
    func aFileSwappedInBetweenTheConfirmationAndYesIsKeptAndShownKept() throws {
        // GIVEN the delete confirmation listing a complete download's file to delete
        // WHEN another file takes its name before Yes is clicked
        let result = try Self.attack("swap", name: "swap")
        // THEN the result lists it kept with the reason, and it is still on disk, untouched
        #expect(result.status == 0, "\(result.stderr)\n\(result.stdoutString)")
    }

    @Test(.timeLimit(.minutes(4)))
    func aPageWhoseRPCWasPointedAtAnotherLocalProcessSaysSoBeforeASecretIsTyped() throws {
        // GIVEN a crafted link: this server's page with ?rpc= at another local process that wants a secret
        // WHEN it is opened
        let result = try Self.attack("foreign", name: "foreign")
        // THEN the request for a secret says the endpoint is not the server the page came from
        #expect(result.status == 0, "\(result.stderr)\n\(result.stdoutString)")
    }
}
