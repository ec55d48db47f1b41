import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `haul serve` driven by clients we did not write: the Python library aria2p, and the dashboard
/// in a real headless Chromium. Both come from outside Swift: `scripts/test-venv.sh` makes the
/// Python environment (aria2p, websocket-client from PyPI) and `.ci/run` installs chromium.
@Suite("haul serve driven by aria2p and a headless browser", .serialized)
struct CLIServeClientTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// The Python of the test environment, made on first use.
    static func python() throws -> String {
        let made = try ProcessRunner.run("/bin/bash", [root + "/scripts/test-venv.sh"], timeout: 300)
        let path = made.stdoutString.trimmingCharacters(in: .whitespacesAndNewlines)
        guard made.status == 0, FileManager.default.isExecutableFile(atPath: path) else {
            throw TestSupportError("scripts/test-venv.sh could not make the Python environment (aria2p): \(made.stderr)")
        }
        return path
    }

    static func script(_ relative: String) -> String { root + "/" + relative }

    @Test(.timeLimit(.minutes(3)))
    func aria2pAddsListsPausesUnpausesRemovesAndHearsNotifications() throws {
        let python = try Self.python()
        let work = try TemporaryDirectory(prefix: "haul-serve-aria2p")
        let nginx = try ServedFiles.start(in: work, [("big.bin", 64 << 20, 41), ("small.bin", 1 << 20, 42)], limitRate: "2m")
        defer { nginx.stop() }
        // One connection per file: the big download stays active for the whole check.
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"), extra: ["-x", "1"])
        defer { _ = try? serve.stop() }

        let result = try ProcessRunner.run(
            python,
            [
                Self.script("Tests/RPC/aria2p_check.py"), "--phase", "basic", "--port", String(serve.port), "--secret", serve.secret,
                "--url", nginx.baseURL + "/limited/big.bin", "--url2", nginx.baseURL + "/small.bin", "--dir", work.file("dl"),
                "--size", String(64 << 20), "--size2", String(1 << 20), "--timeout", "60",
            ], timeout: 170)
        #expect(result.status == 0, "aria2p check failed:\n\(result.stderr)\n\(result.stdoutString)")
        #expect(result.stdoutString.contains("\"ok\": true"))
        #expect(Disk.difference(work.file("dl/small.bin"), TestData.bytes(count: 1 << 20, seed: 42)) == nil)
    }

    @Test(.timeLimit(.minutes(2)))
    func aRemovedDownloadKeepsItsFiguresForAria2p() throws {
        // GIVEN a slow download that aria2p saw active with some bytes
        let python = try Self.python()
        let work = try TemporaryDirectory(prefix: "haul-serve-removed")
        let server = try FaultServer()
        defer { server.stop() }
        server.setResource("/slow.bin", body: TestData.bytes(count: 20 << 20, seed: 44))
        server.setPersistentFaults("/slow.bin", [.throttle(bytesPerSecond: 1 << 20)])
        // Removed within the first second, before the store's first periodic write of its figures.
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"), extra: ["-x", "1"])
        defer { _ = try? serve.stop() }
        // WHEN aria2p removes it (aria2.remove alone) THEN tellStatus and tellStopped keep its
        // completedLength and totalLength, read after read for 3 s
        let result = try ProcessRunner.run(
            python,
            [
                Self.script("Tests/RPC/aria2p_check.py"), "--phase", "remove-figures", "--port", String(serve.port), "--secret", serve.secret,
                "--url", server.url("/slow.bin"), "--dir", work.file("dl"), "--size", String(20 << 20), "--min-bytes", "300000",
                "--hold", "3", "--timeout", "30",
            ], timeout: 100)
        #expect(result.status == 0, "aria2p check failed:\n\(result.stderr)\n\(result.stdoutString)")
        #expect(result.stdoutString.contains("\"ok\": true"))
    }

    @Test(.timeLimit(.minutes(3)))
    func aDownloadActiveWhenTheServerStopsComesBackActiveUnderItsGIDAndEndsBitExact() throws {
        let python = try Self.python()
        let work = try TemporaryDirectory(prefix: "haul-serve-restart")
        let nginx = try ServedFiles.start(in: work, [("big.bin", 24 << 20, 43)], limitRate: "1m")
        let sha = try TestData.sha256(ofFile: work.file("www/big.bin"))
        defer { nginx.stop() }
        let stateFile = work.file("gid.json")

        // GIVEN a download that aria2p started and saw active with some bytes
        let first = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        let started = try ProcessRunner.run(
            python,
            [
                Self.script("Tests/RPC/aria2p_check.py"), "--phase", "start-restart", "--port", String(first.port), "--secret", first.secret,
                "--url", nginx.baseURL + "/limited/big.bin", "--dir", work.file("dl"), "--state-file", stateFile, "--min-bytes", "1000000",
            ], timeout: 90)
        #expect(started.status == 0, "start: \(started.stderr)")
        // WHEN the server is stopped with SIGTERM and started again on the same store (another port)
        let ending = try first.stop()
        #expect(ending == .exited(143) || ending == .exited(0), "\(ending): \(first.running.stderr)")
        let requestsBefore = nginx.accessLog().count
        let second = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { _ = try? second.stop() }

        // THEN aria2p finds the same GID active by itself, resumed (not restarted), and the file is bit-exact
        let after = try ProcessRunner.run(
            python,
            [
                Self.script("Tests/RPC/aria2p_check.py"), "--phase", "after-restart", "--port", String(second.port), "--secret", second.secret,
                "--state-file", stateFile, "--sha256", sha, "--require-resume", "--timeout", "90",
            ], timeout: 170)
        #expect(after.status == 0, "after restart: \(after.stderr)\n\(after.stdoutString)")
        // AND the requests after the restart asked for ranges, never the whole file again
        let later = nginx.accessLog().dropFirst(requestsBefore).filter { $0.uri == "/limited/big.bin" }
        #expect(!later.isEmpty && later.allSatisfy { $0.status == 206 }, "\(later.map(\.status))")
    }

    @Test(.timeLimit(.minutes(3)))
    func aFirstVisitToAServerWithoutASecretListsItsRunningDownloadsWithoutAClick() throws {
        let chromium = "/usr/bin/chromium"
        try #require(FileManager.default.isExecutableFile(atPath: chromium), "chromium is missing: apt-get install chromium (.ci/run does)")
        let python = try Self.python()
        let work = try TemporaryDirectory(prefix: "haul-serve-first-visit")
        let nginx = try ServedFiles.start(in: work, [("big.bin", 64 << 20, 46)], limitRate: "1m")
        defer { nginx.stop() }
        // GIVEN `haul serve` started without --secret, running four downloads
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"), withSecret: false, extra: ["-x", "1"])
        defer { _ = try? serve.stop() }
        for index in 1...4 {
            _ = try serve.result("aria2.addUri", [[nginx.baseURL + "/limited/big.bin"], ["out": "file\(index).bin"]])
        }
        // WHEN a browser opens the dashboard for the first time and clicks nothing
        let result = try ProcessRunner.run(
            python,
            [
                Self.script("Tests/Browser/dashboard_check.py"), "--page", serve.base + "/", "--first-visit-active", "4", "--chromium", chromium, "--timeout",
                "60",
            ],
            timeout: 120)
        // THEN it is connected and lists the four running downloads
        #expect(result.status == 0, "first visit check failed:\n\(result.stderr)\n\(result.stdoutString)")
    }

    @Test(.timeLimit(.minutes(3)))
    func theDashboardFallsBackToPollingWhenTheEventStreamFails() throws {
        let chromium = "/usr/bin/chromium"
        try #require(FileManager.default.isExecutableFile(atPath: chromium), "chromium is missing: apt-get install chromium (.ci/run does)")
        let python = try Self.python()
        let work = try TemporaryDirectory(prefix: "haul-serve-fallback")
        let nginx = try ServedFiles.start(in: work, [("big.bin", 64 << 20, 47), ("small.bin", 40_000, 48)], limitRate: "1m")
        defer { nginx.stop() }
        // GIVEN `haul serve` without --secret with one complete download and two running
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"), withSecret: false, extra: ["-x", "1"])
        defer { _ = try? serve.stop() }
        let complete = try #require(try serve.result("aria2.addUri", [[nginx.baseURL + "/small.bin"]]) as? String)
        for index in 1...2 {
            _ = try serve.result("aria2.addUri", [[nginx.baseURL + "/limited/big.bin"], ["out": "file\(index).bin"]])
        }
        // WHEN the dashboard opens in a browser that fails every request to /haul/events
        let result = try ProcessRunner.run(
            python,
            [
                Self.script("Tests/Browser/dashboard_check.py"), "--page", serve.base + "/", "--first-visit-active", "2", "--stream-blocked",
                "--file-needs-secret", complete, "--chromium",
                chromium, "--timeout", "60",
            ],
            timeout: 120)
        // THEN it says the stream is off, and the rows' figures still move, by polling alone
        // AND the complete one's Download says the server serves files only with a --secret
        #expect(result.status == 0, "fallback check failed:\n\(result.stderr)\n\(result.stdoutString)")
        #expect(result.stdoutString.contains("\"fallback\""), "\(result.stdoutString)")
    }

    /// GIVEN `haul serve` with a secret and real files from nginx; WHEN the dashboard is driven in
    /// headless Chromium; THEN the old steps pass (refused, connect, add, pause, resume, remove),
    /// the active row's figures come from the event stream with no refresh between them, and a
    /// complete download's file is downloaded exact through the signed link, moved to
    /// `moved/renamed.bin` on disk, and deleted with its files after a confirmation listing them.
    @Test(.timeLimit(.minutes(3)))
    func theDashboardWorksInHeadlessChromium() throws {
        let chromium = "/usr/bin/chromium"
        try #require(FileManager.default.isExecutableFile(atPath: chromium), "chromium is missing: apt-get install chromium (.ci/run does)")
        let python = try Self.python()
        let work = try TemporaryDirectory(prefix: "haul-serve-browser")
        let nginx = try ServedFiles.start(in: work, [("big.bin", 64 << 20, 44), ("small.bin", 3 << 20, 45)], limitRate: "2m")
        defer { nginx.stop() }
        let smallSHA = try TestData.sha256(ofFile: work.file("www/small.bin"))
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"), extra: ["-x", "1"])
        defer { _ = try? serve.stop() }
        let screenshot = work.file("dashboard.png")

        let result = try ProcessRunner.run(
            python,
            [
                Self.script("Tests/Browser/dashboard_check.py"), "--page", serve.base + "/", "--secret", serve.secret,
                "--download-url", nginx.baseURL + "/limited/big.bin", "--screenshot", screenshot, "--chromium", chromium, "--timeout", "120",
                // The new actions: live figures from the event stream, then a complete download's
                // file fetched, moved and deleted with its files, checked on disk.
                "--live-figures", "--complete-url", nginx.baseURL + "/small.bin", "--complete-sha256", smallSHA, "--dir", work.file("dl"),
            ], timeout: 170)
        #expect(result.status == 0, "dashboard check failed:\n\(result.stderr)\n\(result.stdoutString)")
        let png = try #require(Disk.bytes(screenshot), "no screenshot")
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 10_000)
        // README's picture of the dashboard is this screenshot:
        // HAUL_KEEP_SCREENSHOT=$PWD/docs/dashboard.png swift test --filter theDashboardWorksInHeadlessChromium
        if let keep = ProcessInfo.processInfo.environment["HAUL_KEEP_SCREENSHOT"] {
            try Data(png).write(to: URL(fileURLWithPath: keep))
        }
    }
}
