import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `haul` against a real nginx serving HTTPS on loopback with a throwaway CA: certificates are really
/// verified, `--cacert` and `--insecure` really change that, and resume works over TLS too.
@Suite("haul over TLS against nginx", .serialized)
struct CLITLSTests {
    /// nginx serving `files` (name → bytes) over HTTPS with a certificate for 127.0.0.1 signed by a fresh CA.
    struct Fixture {
        let root: TemporaryDirectory
        let certificates: TemporaryDirectory
        let work: TemporaryDirectory
        let caCert: String
        let nginx: NginxServer

        init(files: [String: [UInt8]], limitRate: String? = nil) throws {
            root = try TemporaryDirectory(prefix: "haul-cli-tls-root")
            for (name, bytes) in files { try Disk.write(bytes, to: root.file(name)) }
            certificates = try TemporaryDirectory(prefix: "haul-cli-tls-certs")
            let made = try TestCertificates.make(in: certificates.path)
            caCert = made.caCert
            nginx = try NginxServer(
                documentRoot: root.path, limitRate: limitRate,
                tls: NginxTLS(certificatePath: made.serverCert, keyPath: made.serverKey))
            work = try TemporaryDirectory(prefix: "haul-cli-tls-out")
        }

        /// Access log entries for `uri`, waiting briefly for `count` of them (nginx logs when a request ends).
        func requests(for uri: String, atLeast count: Int) -> [NginxAccessLogEntry] {
            _ = Disk.waitUntil(timeout: 5) { nginx.accessLog().filter { $0.uri == uri }.count >= count }
            return nginx.accessLog().filter { $0.uri == uri }
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func http11ByDefaultAndHTTP2WhenAskedEvenWithSegments() throws {
        // GIVEN nginx offering HTTP/2 over TLS (ALPN)
        let data = TestData.bytes(count: 12 << 20, seed: 72)
        let fixture = try Fixture(files: ["h2.bin": data, "h1.bin": data], limitRate: "4m")
        // WHEN haul downloads with --http2 (four connections), and again with its defaults
        let h2 = try HaulBinary.run(
            ["-q", "-x", "4", "--http2", "--cacert", fixture.caCert, "-o", fixture.work.file("h2.bin"), fixture.nginx.baseURL + "/limited/h2.bin"])
        let h1 = try HaulBinary.run(["-q", "-x", "4", "--cacert", fixture.caCert, "-o", fixture.work.file("h1.bin"), fixture.nginx.baseURL + "/limited/h1.bin"])
        // THEN both files are bit-exact, every request of the first was HTTP/2, of the second HTTP/1.1
        #expect(h2.status == 0 && h1.status == 0, "\(h2.stderr) \(h1.stderr)")
        #expect(Disk.difference(fixture.work.file("h2.bin"), data) == nil)
        #expect(Disk.difference(fixture.work.file("h1.bin"), data) == nil)
        let overH2 = fixture.requests(for: "/limited/h2.bin", atLeast: 2)
        let overH1 = fixture.requests(for: "/limited/h1.bin", atLeast: 2)
        #expect(overH2.count > 1 && overH2.allSatisfy { $0.httpProtocol == "HTTP/2.0" }, "\(overH2)")
        #expect(overH1.count > 1 && overH1.allSatisfy { $0.httpProtocol == "HTTP/1.1" }, "\(overH1)")
    }

    @Test(
        "GIVEN nginx offering HTTP/2 WHEN a batch of many small files runs with --http2 THEN every file arrives (a reused transfer handle libcurl still holds a buffer for is replaced, not refused)",
        .timeLimit(.minutes(1))
    )
    func aBatchOverHTTP2ReusesItsHandles() throws {
        let files = (0..<300).map { ("s\($0).bin", TestData.bytes(count: 2_000 + $0, seed: 500 + UInt64($0))) }
        let fixture = try Fixture(files: Dictionary(uniqueKeysWithValues: files))
        let list = fixture.work.file("urls.txt")
        try Disk.write(Array(files.map { fixture.nginx.baseURL + "/" + $0.0 }.joined(separator: "\n").utf8), to: list)
        let out = fixture.work.file("out")

        let result = try HaulBinary.run(
            ["-q", "--http2", "--cacert", fixture.caCert, "--state", fixture.work.file("state"), "-i", list, "-j", "8", "-d", out], timeout: 50)

        #expect(result.status == 0, "stderr: \(result.stderr.prefix(600))")
        for (name, bytes) in files {
            #expect(Disk.difference(out + "/" + name, bytes) == nil, "\(name)")
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func serverSignedByAnUntrustedCAIsRefusedWithNetworkExitCode() throws {
        // GIVEN nginx over HTTPS with a certificate from a CA that nothing trusts
        let data = TestData.bytes(count: 256 << 10, seed: 71)
        let fixture = try Fixture(files: ["file.bin": data])
        #expect(fixture.nginx.baseURL.hasPrefix("https://127.0.0.1:"))
        let output = fixture.work.file("file.bin")

        // WHEN haul downloads from it without --cacert or --insecure (default retries)
        let started = ContinuousClock.now
        let result = try HaulBinary.run(["-o", output, fixture.nginx.baseURL + "/file.bin"], timeout: 30)
        let elapsed = ContinuousClock.now - started

        // THEN it fails as a network error (3), saying the certificate could not be verified
        #expect(result.status == 3, "stderr: \(result.stderr)")
        let stderr = result.stderr.lowercased()
        #expect(stderr.contains("certificate"), "stderr: \(result.stderr)")
        // AND a verification failure is not retried: it would fail the same way every time
        #expect(elapsed < .seconds(5), "took \(elapsed); stderr: \(result.stderr)")
        // AND nothing is written: no file, no partial, no resume record
        #expect(!Disk.exists(output))
        #expect(!Disk.exists(output + ".haul-partial"))
        #expect(!Disk.exists(output + ".haul-resume"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.work.path).isEmpty)
        // AND no HTTP request ever reached nginx, since the handshake was abandoned
        #expect(fixture.nginx.accessLog().isEmpty, "\(fixture.nginx.accessLog())")
    }

    @Test(.timeLimit(.minutes(1)))
    func trustingAnotherCAStillRefusesTheServer() throws {
        // GIVEN nginx over HTTPS, and a second, unrelated CA
        let fixture = try Fixture(files: ["file.bin": TestData.bytes(count: 64 << 10, seed: 72)])
        let otherCertificates = try TemporaryDirectory(prefix: "haul-cli-tls-other")
        let otherCA = try TestCertificates.make(in: otherCertificates.path).caCert
        let output = fixture.work.file("file.bin")

        // WHEN haul trusts only the unrelated CA
        let result = try HaulBinary.run(
            ["-q", "--cacert", otherCA, "-o", output, fixture.nginx.baseURL + "/file.bin"], timeout: 30)

        // THEN it is refused as a network error and leaves nothing behind
        #expect(result.status == 3, "stderr: \(result.stderr)")
        #expect(result.stderr.lowercased().contains("certificate"), "stderr: \(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.work.path).isEmpty)
    }

    @Test(.timeLimit(.minutes(1)))
    func trustingTheCAWithCacertDownloadsTheExactBytes() throws {
        // GIVEN nginx over HTTPS serving 1 MiB
        let data = TestData.bytes(count: 1 << 20, seed: 73)
        let fixture = try Fixture(files: ["file.bin": data])
        let output = fixture.work.file("file.bin")

        // WHEN haul trusts the CA that signed the server's certificate
        let result = try HaulBinary.run(
            ["-q", "--cacert", fixture.caCert, "-o", output, fixture.nginx.baseURL + "/file.bin"], timeout: 30)

        // THEN the download succeeds, bit-exact, with no leftovers and no warning
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, data) == nil, "\(Disk.difference(output, data) ?? "")")
        #expect(!Disk.exists(output + ".haul-partial"))
        #expect(!Disk.exists(output + ".haul-resume"))
        #expect(result.stderr.isEmpty, "stderr: \(result.stderr)")
        #expect(fixture.requests(for: "/file.bin", atLeast: 1).map(\.status) == [200])
    }

    @Test(.timeLimit(.minutes(1)))
    func theCertificateNamesLocalhostToo() throws {
        // GIVEN nginx over HTTPS, whose certificate also names DNS:localhost
        let data = TestData.bytes(count: 128 << 10, seed: 74)
        let fixture = try Fixture(files: ["file.bin": data])
        let output = fixture.work.file("file.bin")

        // WHEN haul fetches it as https://localhost:PORT with the CA trusted
        let result = try HaulBinary.run(
            ["-q", "--cacert", fixture.caCert, "-o", output, "https://localhost:\(fixture.nginx.port)/file.bin"],
            timeout: 30)

        // THEN the host name matches and the bytes are exact
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, data) == nil, "\(Disk.difference(output, data) ?? "")")
    }

    @Test(.timeLimit(.minutes(1)))
    func insecureSkipsVerificationAndSaysSo() throws {
        // GIVEN nginx over HTTPS with a certificate from an untrusted CA
        let data = TestData.bytes(count: 512 << 10, seed: 75)
        let fixture = try Fixture(files: ["file.bin": data])
        let output = fixture.work.file("file.bin")

        // WHEN haul runs with --insecure (not quiet, so the warning may be shown)
        let result = try HaulBinary.run(
            ["--insecure", "-o", output, fixture.nginx.baseURL + "/file.bin"], timeout: 30)

        // THEN it succeeds, bit-exact, and warns on stderr that verification is off
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, data) == nil, "\(Disk.difference(output, data) ?? "")")
        #expect(result.stderr.contains("NOT verified"), "stderr: \(result.stderr)")
        #expect(result.stdoutString.isEmpty || !result.stdoutString.contains("NOT verified"))
    }

    @Test(.timeLimit(.minutes(1)))
    func interruptedHTTPSDownloadResumesWithARangeAndIsExact() throws {
        // GIVEN nginx over HTTPS serving 3 MiB at 1 MiB/s under /limited/
        let size = 3 << 20
        let data = TestData.bytes(count: size, seed: 76)
        let fixture = try Fixture(files: ["slow.bin": data], limitRate: "1m")
        let uri = "/limited/slow.bin"
        let output = fixture.work.file("slow.bin")
        let arguments = ["-q", "--retry", "0", "--cacert", fixture.caCert, "-o", output, fixture.nginx.baseURL + uri]

        // WHEN haul is interrupted with SIGINT once it holds at least 256 KiB
        let running = try RunningHaul(arguments)
        let reached = Disk.waitUntil(timeout: 15) { (Disk.size(output + ".haul-partial") ?? 0) >= 256 << 10 }
        running.send(SIGINT)
        let ending = try running.wait(timeout: 15)

        // THEN it stops with 130 and keeps a partial file and its resume record
        #expect(reached, "the partial never reached 256 KiB; stderr: \(running.stderr)")
        #expect(ending == .exited(130), "stderr: \(running.stderr)")
        let kept = Disk.size(output + ".haul-partial") ?? 0
        #expect(kept > 0 && kept < Int64(size), "kept \(kept) bytes")
        #expect(Disk.exists(output + ".haul-resume"))
        #expect(!Disk.exists(output))

        // WHEN haul runs again with the same arguments
        let second = try HaulBinary.run(arguments, timeout: 30)

        // THEN it completes bit-exact and leaves nothing else behind
        #expect(second.status == 0, "stderr: \(second.stderr)")
        #expect(Disk.difference(output, data) == nil, "\(Disk.difference(output, data) ?? "")")
        #expect(!Disk.exists(output + ".haul-partial"))
        #expect(!Disk.exists(output + ".haul-resume"))
        // AND the second request asked nginx for exactly the bytes that were missing
        let entries = fixture.requests(for: uri, atLeast: 2)
        #expect(entries.map(\.range) == [nil, "bytes=\(kept)-"], "\(entries)")
        #expect(entries.last?.status == 206, "\(entries)")
        #expect(entries.last?.bodyBytesSent == size - Int(kept), "\(entries)")
    }
}

/// A redirect from https to http is refused unless asked for, so nothing follows it in clear text.
@Suite("haul https to http", .serialized)
struct CLIDowngradeTests {
    @Test(.timeLimit(.minutes(1)))
    func httpsToHttpRedirectIsRefusedAndNothingReachesTheHttpServer() throws {
        // GIVEN an http server, and nginx over https (own CA) redirecting /go to it
        let plain = try FaultServer()
        let body = TestData.bytes(count: 5_000, seed: 211)
        plain.setResource("/f.bin", body: body)
        let root = try TemporaryDirectory(prefix: "haul-cli-downgrade-root")
        let certificates = try TemporaryDirectory(prefix: "haul-cli-downgrade-certs")
        let made = try TestCertificates.make(in: certificates.path)
        let nginx = try NginxServer(
            documentRoot: root.path, tls: NginxTLS(certificatePath: made.serverCert, keyPath: made.serverKey),
            redirects: ["/go": plain.url("/f.bin")])
        defer { nginx.stop() }
        let work = try TemporaryDirectory(prefix: "haul-cli-downgrade")
        let arguments = ["-q", "--retry", "0", "--cacert", made.caCert, "-H", "X-Api-Key: k", "-o", work.file("f.bin"), nginx.baseURL + "/go"]

        // WHEN haul follows it with a custom header
        let refused = try HaulBinary.run(arguments)

        // THEN it exits 9, says how to allow it, and the http server got no request
        #expect(refused.status == 9, "stderr: \(refused.stderr)")
        #expect(refused.stderr.contains("--allow-http-redirect"), "stderr: \(refused.stderr)")
        #expect(plain.requests.isEmpty)

        // AND with --allow-http-redirect it is followed (the custom header went to the same host,
        // another origin only by scheme, as the user allowed)
        let allowed = try HaulBinary.run(["--allow-http-redirect"] + arguments)
        #expect(allowed.status == 0, "stderr: \(allowed.stderr)")
        #expect(Disk.difference(work.file("f.bin"), body) == nil)
    }
}
