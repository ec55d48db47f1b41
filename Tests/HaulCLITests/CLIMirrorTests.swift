import Foundation
import HaulChecksum
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `--mirror`: one file from several servers at once. nginx on 127.0.0.1 is the primary (its
/// `/limited/` location caps each connection) and FaultServers on 127.0.0.2 and 127.0.0.3 are the
/// mirrors, so each server's own log shows which ranges it served.
@Suite("haul --mirror: one file from several servers", .serialized)
struct CLIMirrorTests {
    static let name = "mirrored.bin"
    static let path = "/" + name

    /// The primary (nginx, 2 MiB/s per connection under /limited/) and a directory for outputs.
    struct Fixture {
        let root: TemporaryDirectory
        let work: TemporaryDirectory
        let nginx: NginxServer
        let bytes: [UInt8]

        init(size: Int = 24 << 20, seed: UInt64 = 801, limitRate: String = "2m") throws {
            bytes = TestData.bytes(count: size, seed: seed)
            root = try TemporaryDirectory(prefix: "haul-mirror-root")
            try Disk.write(bytes, to: root.file(CLIMirrorTests.name))
            nginx = try NginxServer(documentRoot: root.path, limitRate: limitRate)
            work = try TemporaryDirectory(prefix: "haul-mirror-out")
        }

        var primaryURL: String { nginx.baseURL + "/limited" + CLIMirrorTests.path }

        /// `--checksum` with the file's SHA-256: what proves the bytes mirrors deliver.
        var checked: [String] { CLIMirrorTests.checksum(bytes) }

        /// A mirror on `address` serving `body` (the file itself unless told otherwise), each
        /// connection capped at `bytesPerSecond`, with `faults` besides.
        func mirror(
            on address: String, body: [UInt8]? = nil, bytesPerSecond: Int = 2 << 20, faults: [Fault] = [], etag: String = "\"mirror-tag\""
        ) throws -> FaultServer {
            let server = try FaultServer(address: address)
            server.setResource(CLIMirrorTests.path, body: body ?? bytes, etag: etag)
            server.setPersistentFaults(CLIMirrorTests.path, [.throttle(bytesPerSecond: bytesPerSecond)] + faults)
            return server
        }

        /// The closed ranges nginx served with 206 for the primary's path.
        func primaryRanges() -> [String] {
            _ = Disk.waitUntil(timeout: 5) { nginx.accessLog().contains { $0.status == 206 } }
            return nginx.accessLog().filter { $0.status == 206 }.compactMap(\.range)
        }
    }

    /// `--checksum sha256=HEX` of `bytes`.
    static func checksum(_ bytes: [UInt8]) -> [String] {
        let hash = StreamingHash(.sha256)
        bytes.withUnsafeBytes { hash.update($0) }
        return ["--checksum", "sha256=" + hash.finalizeHex()]
    }

    /// The ranges a server was asked for, as (first, last).
    static func ranges(_ server: FaultServer) -> [(first: Int, last: Int)] {
        server.requests.compactMap { request in
            guard let value = request.header("Range"), value.hasPrefix("bytes=") else { return nil }
            let parts = value.dropFirst(6).split(separator: "-").compactMap { Int($0) }
            return parts.count == 2 ? (parts[0], parts[1]) : nil
        }
    }

    /// Ranges longer than a probe (64 KiB): segments.
    static func segmentRanges(_ server: FaultServer) -> [(first: Int, last: Int)] {
        ranges(server).filter { $0.last - $0.first + 1 > 64 << 10 }
    }

    @Test(.timeLimit(.minutes(1)))
    func threeServersShareOneFile() throws {
        // GIVEN the file on nginx and on two mirrors, every connection capped at 2 MiB/s
        let fixture = try Fixture()
        let second = try fixture.mirror(on: "127.0.0.2")
        let third = try fixture.mirror(on: "127.0.0.3")
        let output = fixture.work.file("out.bin")

        // WHEN haul fetches it over six connections from the three servers
        let result = try HaulBinary.run(
            ["-x", "6", "-o", output, fixture.primaryURL, "--mirror", second.url(Self.path), "--mirror", third.url(Self.path)] + fixture.checked,
            timeout: 50)

        // THEN the file is bit-exact
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, fixture.bytes) == nil)
        // AND both mirrors were admitted, and each server served segments of it
        #expect(result.stderr.contains("mirror \(second.url(Self.path)) admitted"), "\(result.stderr)")
        #expect(result.stderr.contains("mirror \(third.url(Self.path)) admitted"), "\(result.stderr)")
        #expect(!Self.segmentRanges(second).isEmpty, "127.0.0.2 ranges: \(Self.ranges(second))")
        #expect(!Self.segmentRanges(third).isEmpty, "127.0.0.3 ranges: \(Self.ranges(third))")
        #expect(!fixture.primaryRanges().isEmpty, "nginx: \(fixture.nginx.accessLog())")
        // AND each mirror's segment requests carried its own validator, never the primary's
        for server in [second, third] {
            let segments = server.requests.filter { ($0.header("Range") ?? "").hasPrefix("bytes=") && $0.header("If-Range") != nil }
            #expect(!segments.isEmpty)
            #expect(segments.allSatisfy { $0.header("If-Range") == "\"mirror-tag\"" }, "\(segments.map { $0.header("If-Range") ?? "-" })")
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aMirrorWithOtherBytesIsDroppedAndNoneOfItsBytesAreKept() throws {
        // GIVEN a mirror serving other bytes of the same length, and an honest one
        let fixture = try Fixture()
        let other = TestData.bytes(count: fixture.bytes.count, seed: 802)
        let liar = try fixture.mirror(on: "127.0.0.2", body: other)
        let honest = try fixture.mirror(on: "127.0.0.3")
        let output = fixture.work.file("out.bin")

        // WHEN haul is given both
        let result = try HaulBinary.run(
            ["-x", "6", "-o", output, fixture.primaryURL, "--mirror", liar.url(Self.path), "--mirror", honest.url(Self.path)] + fixture.checked,
            timeout: 50)

        // THEN the file is the primary's, bit for bit
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, fixture.bytes) == nil)
        // AND the liar was dropped with a message that says why, after its probe alone
        #expect(result.stderr.contains("mirror \(liar.url(Self.path)) dropped: its bytes differ from the primary's"), "\(result.stderr)")
        #expect(Self.segmentRanges(liar).isEmpty, "segments asked of the liar: \(Self.ranges(liar))")
        #expect(Self.ranges(liar).count == 1, "\(Self.ranges(liar))")
        // AND the honest mirror still served segments
        #expect(!Self.segmentRanges(honest).isEmpty, "\(Self.ranges(honest))")
    }

    @Test(.timeLimit(.minutes(1)))
    func aMirrorOfAnotherLengthIsDroppedBeforeAnyOfItsBytesAreWritten() throws {
        // GIVEN a mirror whose file is one byte shorter (its first bytes are the same)
        let fixture = try Fixture(size: 12 << 20, seed: 803)
        let shorter = try fixture.mirror(on: "127.0.0.2", body: Array(fixture.bytes.dropLast()))
        let output = fixture.work.file("out.bin")

        // WHEN haul is given it (adapting its connections)
        let result = try HaulBinary.run(["--json", "-o", output, fixture.primaryURL, "--mirror", shorter.url(Self.path)] + fixture.checked, timeout: 50)

        // THEN the file is complete from the primary alone
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, fixture.bytes) == nil)
        // AND the mirror was dropped for its length, after the probe, which compares and never writes
        let mirrorEvents = JSONLines.parse(result.stdoutString).filter { ($0["event"] as? String) == "mirror" }
        #expect(mirrorEvents.count == 1, "\(mirrorEvents)")
        #expect(mirrorEvents.first?["change"] as? String == "dropped")
        let reason = mirrorEvents.first?["reason"] as? String ?? ""
        #expect(reason.contains("its file is \(fixture.bytes.count - 1) bytes, the primary's \(fixture.bytes.count)"), "\(reason)")
        #expect(shorter.requests.count == 1)
        #expect(Self.segmentRanges(shorter).isEmpty)
    }

    @Test(.timeLimit(.minutes(1)), arguments: ["drop", "stall"])
    func aMirrorFailingMidwayHandsItsRangeBack(_ failure: String) throws {
        // GIVEN a mirror that cuts (or stalls) every transfer after 512 KiB
        let fixture = try Fixture(seed: 804)
        let fault: Fault = failure == "drop" ? .dropAfter(bytes: 512 << 10) : .stall(afterBytes: 512 << 10, seconds: 20)
        let failing = try fixture.mirror(on: "127.0.0.2", faults: [fault])
        let output = fixture.work.file("out.bin")

        // WHEN haul uses it with the primary
        let result = try HaulBinary.run(
            ["-x", "4", "--stall-timeout", "1", "-o", output, fixture.primaryURL, "--mirror", failing.url(Self.path)] + fixture.checked, timeout: 50)

        // THEN the download completes, bit-exact: the mirror's ranges were finished elsewhere
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, fixture.bytes) == nil)
        // AND the mirror was admitted, served segments, then was dropped with a message
        #expect(result.stderr.contains("mirror \(failing.url(Self.path)) admitted"), "\(result.stderr)")
        #expect(result.stderr.contains("mirror \(failing.url(Self.path)) dropped: its transfers failed"), "\(result.stderr)")
        #expect(!Self.segmentRanges(failing).isEmpty)
    }

    @Test(.timeLimit(.minutes(1)))
    func anUnreachableMirrorIsDroppedAndThePrimaryFinishesAlone() throws {
        // GIVEN a mirror URL (with a password) on a port that refuses connections
        let fixture = try Fixture(size: 12 << 20, seed: 808)
        let refusing = try RefusingPort()
        let mirror = "http://dave:gone-pw-7@127.0.0.1:\(refusing.port)\(Self.path)"
        let output = fixture.work.file("out.bin")

        // WHEN haul is given it
        let result = try HaulBinary.run(["-x", "4", "-o", output, fixture.primaryURL, "--mirror", mirror] + fixture.checked, timeout: 50)

        // THEN the primary delivers the whole file, and the mirror's drop is said without its password
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, fixture.bytes) == nil)
        #expect(
            result.stderr.contains("mirror http://dave:***@127.0.0.1:\(refusing.port)\(Self.path) dropped: it cannot be reached"), "\(result.stderr)")
        #expect(!result.stderr.contains("gone-pw-7"))
        #expect(fixture.primaryRanges().count >= 3, "\(fixture.primaryRanges())")
    }

    @Test(.timeLimit(.minutes(1)))
    func noCredentialOfOneServerReachesAnother() throws {
        // GIVEN a primary reached with a password in its URL, a cookie and a key header, a mirror with
        // its own login that redirects to a third server, and a mirror without any login
        let bytes = TestData.bytes(count: 12 << 20, seed: 805)
        let primary = try FaultServer(address: "127.0.0.1")
        primary.setResource(Self.path, body: bytes, etag: "\"primary\"")
        primary.setPersistentFaults(Self.path, [.throttle(bytesPerSecond: 2 << 20)])
        let landing = try FaultServer(address: "127.0.0.3")
        landing.setResource(Self.path, body: bytes, etag: "\"landing\"")
        landing.setPersistentFaults(Self.path, [.throttle(bytesPerSecond: 2 << 20)])
        let redirecting = try FaultServer(address: "127.0.0.2")
        redirecting.setPersistentFaults("/moved.bin", [.redirect(status: 302, location: landing.url(Self.path))])
        let plain = try FaultServer(address: "127.0.0.2")
        plain.setResource(Self.path, body: bytes, etag: "\"plain\"")
        plain.setPersistentFaults(Self.path, [.throttle(bytesPerSecond: 2 << 20)])
        let work = try TemporaryDirectory(prefix: "haul-mirror-creds")
        let output = work.file("out.bin")
        let primaryURL = primary.url(Self.path).replacingOccurrences(of: "http://", with: "http://alice:primary-pw-1@")
        let loginMirror = redirecting.url("/moved.bin").replacingOccurrences(of: "http://", with: "http://bob:mirror-pw-2@")

        // WHEN haul downloads it from the three
        let result = try HaulBinary.run(
            [
                "--json", "-x", "6", "-H", "Cookie: session=cookie-secret-3", "-H", "X-Api-Key: key-secret-4", "-o", output, primaryURL,
                "--mirror", loginMirror, "--mirror", plain.url(Self.path),
            ] + Self.checksum(bytes), timeout: 50)

        // THEN the file is bit-exact and every server took part
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, bytes) == nil)
        #expect(!Self.segmentRanges(landing).isEmpty, "\(Self.ranges(landing))")
        #expect(!Self.segmentRanges(plain).isEmpty, "\(Self.ranges(plain))")
        // AND the primary got its own login, cookie and key
        let alice = "Basic " + Data("alice:primary-pw-1".utf8).base64EncodedString()
        #expect(primary.requests.allSatisfy { $0.header("Authorization") == alice && $0.header("X-Api-Key") == "key-secret-4" })
        // AND the mirror with a login got its own login only, and nothing of the primary's
        let bob = "Basic " + Data("bob:mirror-pw-2".utf8).base64EncodedString()
        #expect(!redirecting.requests.isEmpty)
        #expect(redirecting.requests.allSatisfy { $0.header("Authorization") == bob })
        // AND the servers the primary's credentials do not belong to never saw them, nor the mirror's login past its redirect
        for request in redirecting.requests + landing.requests + plain.requests {
            let secrets = request.headers.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
            #expect(!secrets.contains("cookie-secret-3") && !secrets.contains("key-secret-4") && !secrets.contains(alice), "\(secrets)")
        }
        #expect((landing.requests + plain.requests).allSatisfy { $0.header("Authorization") == nil && $0.header("Cookie") == nil })
        // AND no output shows a password
        for secret in ["primary-pw-1", "mirror-pw-2"] {
            #expect(!(result.stdoutString + result.stderr).contains(secret))
        }
    }

    @Test func mirrorsAreRefusedWhereTheyCannotApply() throws {
        // GIVEN a working directory and a list file
        let work = try TemporaryDirectory(prefix: "haul-mirror-usage")
        let list = work.file("list.txt")
        try "http://127.0.0.1:9/a.bin\n".write(toFile: list, atomically: true, encoding: .utf8)
        let mirror = ["--mirror", "http://127.0.0.2:9/a.bin"]
        let cases: [(arguments: [String], says: String)] = [
            (["-i", list, "-d", work.path] + mirror, "one URL"),
            (["-d", work.path, "http://127.0.0.1:9/a.bin", "http://127.0.0.1:9/b.bin"] + mirror, "one URL"),
            (["-o", work.file("a"), "http://127.0.0.1:9/a.bin", "--mirror", "ftp://u:pw-5@127.0.0.2/a.bin"], "not an http or https URL"),
            (["-o", "-", "http://127.0.0.1:9/a.bin"] + mirror, "standard output"),
            (["-o", work.file("a"), "-r", "0-99", "http://127.0.0.1:9/a.bin"] + mirror, "--range"),
            (["-o", work.file("a"), "-x", "1", "http://127.0.0.1:9/a.bin"] + mirror, "-x 1"),
            (["-o", work.file("a"), "--data", "x=1", "http://127.0.0.1:9/a.bin"] + mirror, "--data"),
            (["queue", "add", "--state", work.file("state"), "-d", work.path, "http://127.0.0.1:9/a.bin", "http://127.0.0.1:9/b.bin"] + mirror, "one URL"),
        ]
        for (arguments, says) in cases {
            // WHEN haul is run with them
            let result = try HaulBinary.run(arguments, timeout: 20)

            // THEN it is a usage error that says why, and shows no password
            #expect(result.status == 2, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains("--mirror") && result.stderr.contains(says), "\(arguments): \(result.stderr)")
            #expect(!result.stderr.contains("pw-5"), "\(result.stderr)")
        }
        #expect(!Disk.exists(work.file("a")))
    }

    @Test(.timeLimit(.minutes(1)))
    func aQueuedDownloadKeepsItsMirrorsAndForgetsTheirPasswordsWhenDone() throws {
        // GIVEN a download queued with a mirror that has a password in its URL
        let fixture = try Fixture(size: 12 << 20, seed: 806)
        let mirror = try fixture.mirror(on: "127.0.0.2")
        let state = fixture.work.file("state")
        let output = fixture.work.file("queued.bin")
        let mirrorURL = mirror.url(Self.path).replacingOccurrences(of: "http://", with: "http://carol:q-mirror-pw-6@")
        let added = try HaulBinary.run(
            ["queue", "add", "--state", state, "-x", "4", "-o", output, fixture.primaryURL, "--mirror", mirrorURL] + fixture.checked)
        #expect(added.status == 0, "stderr: \(added.stderr)")

        // WHEN the queue runs it
        let run = try HaulBinary.run(["queue", "run", "--state", state], timeout: 50)

        // THEN the stored mirror served segments, the file is bit-exact, and nothing shows the password
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(Disk.difference(output, fixture.bytes) == nil)
        #expect(!Self.segmentRanges(mirror).isEmpty, "\(Self.ranges(mirror))")
        #expect(run.stderr.contains("mirror http://carol:***@127.0.0.2"), "\(run.stderr)")
        #expect(!run.stderr.contains("q-mirror-pw-6"))
        // AND the database no longer holds it
        let list = try HaulBinary.run(["queue", "list", "--json", "--state", state])
        #expect(!(list.stdoutString + list.stderr).contains("q-mirror-pw-6"))
        for file in [state + "/haul.sqlite", state + "/haul.sqlite-wal"] {
            let data = FileManager.default.contents(atPath: file) ?? Data()
            #expect(data.range(of: Data("q-mirror-pw-6".utf8)) == nil, "\(file)")
        }
    }

    @Test(.timeLimit(.minutes(2)))
    func aKilledDownloadWithMirrorsResumesAndProbesThemAgain() throws {
        // GIVEN a download from nginx and a mirror, killed with SIGKILL mid-way
        let fixture = try Fixture(size: 32 << 20, seed: 807)
        let mirror = try fixture.mirror(on: "127.0.0.2")
        let output = fixture.work.file("out.bin")
        let arguments = ["-x", "4", "-o", output, fixture.primaryURL, "--mirror", mirror.url(Self.path)] + fixture.checked
        let running = try RunningHaul(arguments)
        #expect(Disk.waitUntil(timeout: 20) { !Self.segmentRanges(mirror).isEmpty })
        usleep(700_000)
        running.send(SIGKILL)
        #expect(try running.wait(timeout: 10) == .signalled(SIGKILL))
        #expect(!Disk.exists(output))
        let probesBefore = Self.ranges(mirror).filter { $0.last - $0.first + 1 == 64 << 10 }.count

        // WHEN the same command runs again
        let result = try HaulBinary.run(arguments, timeout: 60)

        // THEN it resumes (from the record's segments) and completes bit-exact
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stderr.contains("resuming"), "\(result.stderr)")
        #expect(Disk.difference(output, fixture.bytes) == nil)
        // AND the mirror was proven again before it served more
        let probesAfter = Self.ranges(mirror).filter { $0.last - $0.first + 1 == 64 << 10 }.count
        #expect(probesAfter > probesBefore, "probes: \(probesBefore) then \(probesAfter)")
        #expect(result.stderr.contains("mirror \(mirror.url(Self.path)) admitted"), "\(result.stderr)")
    }

    @Test(.timeLimit(.minutes(1)))
    func withoutADigestOfTheWholeFileMirrorsAreNotUsedUnlessAllowedAndTheCompletionSaysWhatProvedThem() throws {
        // GIVEN a mirror that serves the primary's probe window but other bytes elsewhere
        let fixture = try Fixture(size: 12 << 20, seed: 809)
        var other = fixture.bytes
        for index in stride(from: 6 << 20, to: 12 << 20, by: 4096) { other[index] ^= 0xFF }
        let sly = try fixture.mirror(on: "127.0.0.2", body: other)

        // WHEN no digest of the whole file is known (no --checksum; nginx publishes none)
        let output = fixture.work.file("default.bin")
        let result = try HaulBinary.run(["--json", "-x", "4", "-o", output, fixture.primaryURL, "--mirror", sly.url(Self.path)], timeout: 50)
        // THEN the mirror is not used, said, and the file is the primary's
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, fixture.bytes) == nil)
        let notes = JSONLines.parse(result.stdoutString).filter { ($0["event"] as? String) == "mirror" }
        #expect(notes.count == 1 && (notes.first?["reason"] as? String ?? "").hasPrefix("no digest of the whole file is known"), "\(notes)")
        #expect(Self.segmentRanges(sly).isEmpty && Self.ranges(sly).isEmpty, "\(Self.ranges(sly))")

        // WHEN unverified mirrors are allowed
        let allowed = fixture.work.file("allowed.bin")
        let risky = try HaulBinary.run(
            ["--json", "-x", "4", "--mirror-unverified", "-o", allowed, fixture.primaryURL, "--mirror", sly.url(Self.path)], timeout: 50)
        // THEN the completion says the mirror's segments were proven only by its probe
        #expect(risky.status == 0, "stderr: \(risky.stderr)")
        let done = JSONLines.parse(risky.stdoutString).first { ($0["event"] as? String) == "completed" }
        let proof = done?["mirrorProof"] as? String ?? ""
        #expect(proof.contains(sly.url(Self.path)) && proof.contains("only by a 64 KiB probe"), "\(proof)")

        // AND with the file's checksum the completion says the digest proved them
        let sure = fixture.work.file("checked.bin")
        let honest = try fixture.mirror(on: "127.0.0.3")
        let checked = try HaulBinary.run(
            ["--json", "-x", "4", "-o", sure, fixture.primaryURL, "--mirror", honest.url(Self.path)] + fixture.checked, timeout: 50)
        #expect(checked.status == 0, "stderr: \(checked.stderr)")
        let verified = JSONLines.parse(checked.stdoutString).first { ($0["event"] as? String) == "completed" }?["mirrorProof"] as? String ?? ""
        #expect(verified.contains("proven with the whole file by its sha256:"), "\(verified)")
    }

    @Test(.timeLimit(.minutes(1)))
    func aMirrorPublishingAnotherDigestIsDroppedBeforeUse() throws {
        // GIVEN a primary publishing the file's digest and a mirror (same bytes) publishing another
        let bytes = TestData.bytes(count: 12 << 20, seed: 810)
        let right = CLIServerDigestTests.base64(.sha256, bytes)
        let primary = try FaultServer(address: "127.0.0.1")
        primary.setResource(Self.path, body: bytes, etag: "\"p\"", extraHeaders: [("Repr-Digest", "sha-256=:\(right):")])
        primary.setPersistentFaults(Self.path, [.throttle(bytesPerSecond: 2 << 20)])
        let mirror = try FaultServer(address: "127.0.0.2")
        let wrong = Data(repeating: 7, count: 32).base64EncodedString()
        mirror.setResource(Self.path, body: bytes, etag: "\"m\"", extraHeaders: [("Repr-Digest", "sha-256=:\(wrong):")])
        mirror.setPersistentFaults(Self.path, [.throttle(bytesPerSecond: 2 << 20)])
        let work = try TemporaryDirectory(prefix: "haul-mirror-digest")

        // WHEN haul downloads with it
        let result = try HaulBinary.run(["-x", "4", "-o", work.file("out.bin"), primary.url(Self.path), "--mirror", mirror.url(Self.path)], timeout: 50)

        // THEN the mirror is dropped at its probe, for its digest, and served no segment
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(work.file("out.bin"), bytes) == nil)
        #expect(result.stderr.contains("dropped: it publishes another sha256"), "\(result.stderr)")
        #expect(Self.segmentRanges(mirror).isEmpty)
    }
}
