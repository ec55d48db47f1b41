import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Credentials from files, against two loopback hosts (127.0.0.1 and 127.0.0.2, each a FaultServer
/// that records every request's headers): a netrc entry and a cookie reach only the host they
/// belong to, across redirects, retries and segment connections; the queue keeps only paths.
@Suite("haul with credentials from files: --netrc, --netrc-file, --cookies, --cookie-jar", .serialized)
struct CLICredentialFileTests {
    static func basic(_ user: String, _ password: String) -> String {
        "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }

    /// The user:password of a Basic `Authorization` value, decoded.
    static func credentials(_ header: String?) -> String? {
        guard let header, header.hasPrefix("Basic "), let data = Data(base64Encoded: String(header.dropFirst(6))) else { return header }
        return String(decoding: data, as: UTF8.self)
    }

    static func write(_ text: String, to path: String, mode: mode_t) throws {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        #expect(chmod(path, mode) == 0)
    }

    static func mode(_ path: String) -> mode_t? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o777
    }

    /// Host A (127.0.0.1) redirects `/f.bin` to host B (127.0.0.2), which serves 12 MiB with ranges.
    struct TwoHosts {
        let a: FaultServer
        let b: FaultServer
        let body = TestData.bytes(count: 12 << 20, seed: 401)
        let work: TemporaryDirectory

        init() throws {
            a = try FaultServer()
            b = try FaultServer(address: "127.0.0.2")
            b.setResource("/f.bin", body: body)
            a.setPersistentFaults("/f.bin", [.redirect(status: 302, location: b.url("/f.bin"))])
            work = try TemporaryDirectory(prefix: "haul-credentials")
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aNetrcEntryIsSentToItsHostAndNotAcrossARedirect() throws {
        // GIVEN a private netrc with an entry for host A only, and A redirecting to host B
        let hosts = try TwoHosts()
        let netrc = hosts.work.file("netrc")
        try Self.write("machine 127.0.0.1 login alice password wonderland\n", to: netrc, mode: 0o600)
        let output = hosts.work.file("f.bin")

        // WHEN haul downloads from A over 4 connections with --netrc-file
        let result = try HaulBinary.run(["-q", "-x", "4", "--retry", "0", "--netrc-file", netrc, "-o", output, hosts.a.url("/f.bin")])

        // THEN A got alice's credentials and not one request to B (segments included) carried any
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, hosts.body) == nil)
        #expect(hosts.a.requests.map { $0.header("Authorization") } == [Self.basic("alice", "wonderland")])
        #expect(hosts.b.requests.count > 1, "the download should have used several connections")
        for request in hosts.b.requests {
            #expect(request.header("Authorization") == nil, "\(request.header("Range") ?? "first") carried credentials")
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func eachHostGetsItsOwnEntryNeverAnotherHostsPassword() throws {
        // GIVEN entries for A (alice) and B (bob, a login without a password: the case of curl's
        // CVE-2024-11053, where the first host's password followed the redirect)
        let hosts = try TwoHosts()
        let netrc = hosts.work.file("netrc")
        try Self.write("machine 127.0.0.1 login alice password wonderland\nmachine 127.0.0.2 login bob\n", to: netrc, mode: 0o600)

        // WHEN haul follows A's redirect to B over 4 connections
        let result = try HaulBinary.run(["-q", "-x", "4", "--retry", "0", "--netrc-file", netrc, "-o", hosts.work.file("f.bin"), hosts.a.url("/f.bin")])

        // THEN every request to B is bob's, none carries alice's password
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(hosts.b.requests.count > 1)
        for request in hosts.b.requests {
            let sent = Self.credentials(request.header("Authorization"))
            #expect(sent == nil || sent?.hasPrefix("bob:") == true, "\(sent ?? "")")
            #expect(sent?.contains("wonderland") != true)
        }
    }

    @Test func aNetrcOthersCanReadIsRefusedAndTildeNetrcIsHome() throws {
        // GIVEN a netrc readable by everyone, as $HOME/.netrc
        let server = try FaultServer()
        server.setResource("/f.bin", body: TestData.bytes(count: 1000, seed: 402))
        let home = try TemporaryDirectory(prefix: "haul-home")
        let netrc = home.file(".netrc")
        try Self.write("machine 127.0.0.1 login alice password wonderland\n", to: netrc, mode: 0o644)

        // WHEN haul (and queue add) is given --netrc
        let download = try HaulBinary.run(["--netrc", "-o", home.file("f.bin"), server.url("/f.bin")], environment: ["HOME": home.path])
        let queued = try HaulBinary.run(
            ["queue", "add", "--state", home.file("state"), "--netrc", "-o", home.file("f.bin"), server.url("/f.bin")], environment: ["HOME": home.path])

        // THEN both refuse it (exit 2) saying how to fix it, before any request
        for result in [download, queued] {
            #expect(result.status == 2, "stderr: \(result.stderr)")
            #expect(result.stderr.contains("chmod 600 \(netrc)"), "\(result.stderr)")
        }
        #expect(server.requests.isEmpty)

        // WHEN the file is made private THEN --netrc uses $HOME/.netrc
        #expect(chmod(netrc, 0o600) == 0)
        let fixed = try HaulBinary.run(["-q", "--netrc", "-o", home.file("f.bin"), server.url("/f.bin")], environment: ["HOME": home.path])
        #expect(fixed.status == 0, "stderr: \(fixed.stderr)")
        #expect(server.requests.map { $0.header("Authorization") } == [Self.basic("alice", "wonderland")])
    }

    @Test(.timeLimit(.minutes(1)))
    func cookiesFollowEveryHopTheirOwnHostAndEndInTheJar() throws {
        // GIVEN A: /start sets hop=1 and redirects to /middle, which sets mid=2 and redirects to
        // B's /f.bin (12 MiB), which sets b=3; and a cookie file with one cookie for each host
        let hosts = try TwoHosts()
        hosts.a.setPersistentFaults(
            "/start", [.combined([.redirect(status: 302, location: "/middle"), .header(name: "Set-Cookie", value: "hop=ck-hop-1; Path=/")])])
        hosts.a.setPersistentFaults(
            "/middle", [.combined([.redirect(status: 302, location: hosts.b.url("/f.bin")), .header(name: "Set-Cookie", value: "mid=ck-mid-2")])])
        hosts.b.setResource("/f.bin", body: hosts.body, extraHeaders: [("Set-Cookie", "b=ck-b-3; Path=/; Max-Age=3600")])
        let cookies = hosts.work.file("in.txt")
        try Self.write(
            "# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\tck-session-a\n127.0.0.2\tFALSE\t/\tFALSE\t0\tother\tck-other-b\n",
            to: cookies, mode: 0o644)
        let jar = hosts.work.file("jar.txt")
        let output = hosts.work.file("f.bin")

        // WHEN haul downloads /start over 4 connections with --cookies and --cookie-jar, and --json
        let result = try HaulBinary.run([
            "--json", "-x", "4", "--retry", "0", "--cookies", cookies, "--cookie-jar", jar, "-o", output, hosts.a.url("/start"),
        ])

        // THEN each hop carried its own host's cookies, including those a redirect set
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, hosts.body) == nil)
        let onA = hosts.a.requests.map { $0.header("Cookie") }
        #expect(onA == ["session=ck-session-a", "session=ck-session-a; hop=ck-hop-1"], "\(onA)")
        let onB = hosts.b.requests.map { $0.header("Cookie") ?? "" }
        #expect(onB.count > 1, "the download should have used several connections")
        #expect(onB.first == "other=ck-other-b")
        // AND the segment connections, which started after B's answer, carried B's new cookie too
        for cookie in onB.dropFirst() { #expect(cookie == "other=ck-other-b; b=ck-b-3", "\(cookie)") }
        // AND no cookie of A reached B
        #expect(!onB.joined().contains("ck-session-a") && !onB.joined().contains("ck-hop") && !onB.joined().contains("ck-mid"))
        // AND the jar holds all five, privately, and no output showed a value
        let written = try String(contentsOfFile: jar, encoding: .utf8)
        for value in ["ck-session-a", "ck-other-b", "ck-hop-1", "ck-mid-2", "ck-b-3"] {
            #expect(written.contains(value), "\(written)")
            #expect(!(result.stdoutString + result.stderr).contains(value))
        }
        #expect(Self.mode(jar) == 0o600)
    }

    @Test(.timeLimit(.minutes(1)))
    func theQueueKeepsThePathsAndReadsTheFilesWhenTheItemRuns() throws {
        // GIVEN a download queued with a netrc file, a cookie file and a jar
        let server = try FaultServer()
        let body = TestData.bytes(count: 50_000, seed: 403)
        server.setResource("/q.bin", body: body, extraHeaders: [("Set-Cookie", "fresh=ck-fresh-9")])
        let work = try TemporaryDirectory(prefix: "haul-credentials")
        let state = work.file("state")
        let netrc = work.file("netrc")
        let cookies = work.file("cookies.txt")
        let jar = work.file("jar.txt")
        try Self.write("machine 127.0.0.1 login carol password nc-secret-5\n", to: netrc, mode: 0o600)
        try Self.write("127.0.0.1\tFALSE\t/\tFALSE\t0\ttoken\tck-old-value\n", to: cookies, mode: 0o600)
        let added = try HaulBinary.run([
            "queue", "add", "--state", state, "--netrc-file", netrc, "--cookies", cookies, "--cookie-jar", jar, "-o", work.file("q.bin"), server.url("/q.bin"),
        ])
        #expect(added.status == 0, "stderr: \(added.stderr)")

        // WHEN the cookie file changes before the queue runs
        try Self.write("127.0.0.1\tFALSE\t/\tFALSE\t0\ttoken\tck-new-value\n", to: cookies, mode: 0o600)
        let run = try HaulBinary.run(["queue", "run", "-q", "--retry", "0", "--state", state])

        // THEN the run read the files as they are then: the netrc's credentials and the new cookie
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(Disk.difference(work.file("q.bin"), body) == nil)
        #expect(server.requests.map { $0.header("Authorization") } == [Self.basic("carol", "nc-secret-5")])
        #expect(server.requests.map { $0.header("Cookie") } == ["token=ck-new-value"])
        // AND the jar got both cookies, and the database never held a password or a cookie value
        let written = try String(contentsOfFile: jar, encoding: .utf8)
        #expect(written.contains("ck-new-value") && written.contains("ck-fresh-9"), "\(written)")
        for file in [state + "/haul.sqlite", state + "/haul.sqlite-wal"] {
            let data = FileManager.default.contents(atPath: file) ?? Data()
            for secret in ["nc-secret-5", "ck-old-value", "ck-new-value", "ck-fresh-9"] {
                #expect(data.range(of: Data(secret.utf8)) == nil, "\(secret) in \(file)")
            }
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aJarThatCannotBeWrittenFailsTheDownloadWithItsBytesKept() throws {
        // GIVEN a slow download with a cookie jar, and the jar's path taken by a directory meanwhile
        let server = try FaultServer()
        let body = TestData.bytes(count: 1_500_000, seed: 404)
        server.setResource("/slow.bin", body: body, extraHeaders: [("Set-Cookie", "s=ck-slow-1")])
        server.enqueueFaults("/slow.bin", [.throttle(bytesPerSecond: 1_000_000)])
        let work = try TemporaryDirectory(prefix: "haul-credentials")
        let jar = work.file("jar.txt")
        let output = work.file("slow.bin")
        let arguments = ["-q", "-x", "1", "--retry", "0", "--cookie-jar", jar, "-o", output, server.url("/slow.bin")]
        let running = try RunningHaul(arguments)
        #expect(Disk.waitUntil(timeout: 10) { (Disk.size(output + ".haul-partial") ?? 0) > 100_000 })
        try FileManager.default.createDirectory(atPath: jar, withIntermediateDirectories: false)

        // WHEN the download reaches its end
        let ending = try running.wait()

        // THEN it fails as an I/O error (6) naming the jar, and the file is not put in place: its bytes are kept
        #expect(ending == .exited(6), "stderr: \(running.stderr)")
        #expect(running.stderr.contains("cannot write the cookie jar"), "\(running.stderr)")
        #expect(!Disk.exists(output))
        #expect(Disk.exists(output + ".haul-partial"))

        // WHEN the path is free again THEN the same command completes (the server's 416 proves the
        // bytes on disk whole) and writes the jar with the cookie of that answer
        try FileManager.default.removeItem(atPath: jar)
        server.setPersistentFaults("/slow.bin", [.header(name: "Set-Cookie", value: "s=ck-slow-2")])
        let again = try HaulBinary.run(arguments)
        #expect(again.status == 0, "stderr: \(again.stderr)")
        #expect(Disk.difference(output, body) == nil)
        #expect(server.requests.last?.header("Range") == "bytes=1500000-")
        #expect(try String(contentsOfFile: jar, encoding: .utf8).contains("s\tck-slow-2"))
    }

    @Test func wrongCredentialFileOptionsAreUsageErrors() throws {
        // GIVEN a file that is no cookie file, and a netrc
        let work = try TemporaryDirectory(prefix: "haul-credentials")
        try Self.write("just some notes\n", to: work.file("notes.txt"), mode: 0o644)
        try Self.write("machine x login y password z\n", to: work.file("netrc"), mode: 0o600)
        let cases: [[String]] = [
            ["--cookies", work.file("missing.txt")],
            ["--cookies", work.file("notes.txt")],
            ["--cookie-jar", work.file("no/such/dir/jar.txt")],
            ["--cookie-jar", work.file("notes.txt")],
            ["--netrc-file", work.file("missing-netrc")],
            ["--netrc", "--netrc-file", work.file("netrc")],
        ]
        for options in cases {
            // WHEN haul is given them THEN it exits 2 before anything, and the notes are untouched
            let result = try HaulBinary.run(options + ["-o", work.file("out.bin"), "http://127.0.0.1:9/f"])
            #expect(result.status == 2, "\(options): \(result.stderr)")
        }
        #expect(try String(contentsOfFile: work.file("notes.txt"), encoding: .utf8) == "just some notes\n")
        #expect(!Disk.exists(work.file("out.bin")))
    }
}
