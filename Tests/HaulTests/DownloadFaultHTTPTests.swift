import Foundation
import Haul
import HaulCore
import HaulTestSupport
import Testing

// Redirects, error statuses and server-chosen file names.
extension DownloadFaultTests {
    @Test("a chain of redirects is followed to the file")
    func redirectChain() async throws {
        // GIVEN /a -> 302 /b -> 302 /file.bin
        let server = try FaultServer()
        let body = TestData.bytes(count: 1 << 20, seed: 41)
        server.setResource(FaultHarness.path, body: body)
        server.setPersistentFaults("/a", [.redirect(status: 302, location: "/b")])
        server.setPersistentFaults("/b", [.redirect(status: 302, location: FaultHarness.path)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("redirected.bin")

        // WHEN /a is downloaded
        let watched = try await FaultHarness.run(FaultHarness.request(server, "/a", to: .file(destination)))

        // THEN the file arrives from the end of the chain, and nothing of the redirect pages is written
        let completion = try #require(watched.completion, "failed: \(String(describing: watched.error))")
        FaultHarness.expectFile(destination, equals: body)
        #expect(completion.finalURL.absoluteString == server.url(FaultHarness.path))
        #expect(server.requests.map(\.path) == ["/a", "/b", FaultHarness.path])
        #expect(watched.responses.first?.finalURL.absoluteString == server.url(FaultHarness.path))
    }

    @Test("a redirect loop fails as a protocol violation and writes nothing")
    func redirectLoop() async throws {
        // GIVEN /x -> /y -> /x
        let server = try FaultServer()
        server.setPersistentFaults("/x", [.redirect(status: 302, location: "/y")])
        server.setPersistentFaults("/y", [.redirect(status: 301, location: "/x")])
        let directory = try TemporaryDirectory()
        let destination = directory.file("loop.bin")

        // WHEN /x is downloaded
        let watched = try await FaultHarness.run(FaultHarness.request(server, "/x", to: .file(destination)))

        // THEN it fails without retrying the loop forever, and leaves no file
        #expect(watched.error?.category == .protocolViolation)
        #expect(server.requests.map(\.path) == ["/x", "/y"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test("credentials follow a same-origin redirect but are dropped on a redirect to another origin")
    func credentialsAcrossOrigins() async throws {
        // GIVEN a second server on another port, and redirects to it and within the first server
        let server = try FaultServer()
        let other = try FaultServer()
        let body = TestData.bytes(count: 256 << 10, seed: 42)
        server.setResource(FaultHarness.path, body: body)
        other.setResource(FaultHarness.path, body: body)
        server.setPersistentFaults("/away", [.redirect(status: 302, location: other.url(FaultHarness.path))])
        server.setPersistentFaults("/here", [.redirect(status: 307, location: FaultHarness.path)])
        let directory = try TemporaryDirectory()
        let headers = HTTPHeaders([("Authorization", "Bearer secret"), ("Cookie", "session=1")])

        // WHEN both are downloaded with an Authorization and a Cookie header
        let away = try await FaultHarness.run(
            FaultHarness.request(server, "/away", to: .file(directory.file("away.bin")), headers: headers))
        let here = try await FaultHarness.run(
            FaultHarness.request(server, "/here", to: .file(directory.file("here.bin")), headers: headers))

        // THEN both complete
        #expect(away.completion != nil, "failed: \(String(describing: away.error))")
        #expect(here.completion != nil, "failed: \(String(describing: here.error))")
        FaultHarness.expectFile(directory.file("away.bin"), equals: body)
        FaultHarness.expectFile(directory.file("here.bin"), equals: body)
        // AND the other origin never saw the credentials
        let otherRequests = other.requests
        try #require(otherRequests.count == 1)
        #expect(otherRequests[0].header("Authorization") == nil)
        #expect(otherRequests[0].header("Cookie") == nil)
        // AND every request to the original origin carried them
        let ownRequests = server.requests
        #expect(ownRequests.map(\.path) == ["/away", "/here", FaultHarness.path])
        #expect(ownRequests.allSatisfy { $0.header("Authorization") == "Bearer secret" })
        #expect(ownRequests.allSatisfy { $0.header("Cookie") == "session=1" })
    }

    @Test("a 404 fails with its status, and neither the error page nor a partial is written")
    func notFound() async throws {
        // GIVEN a path the server does not have
        let server = try FaultServer()
        let directory = try TemporaryDirectory()
        let destination = directory.file("missing.bin")
        let download = Downloader().download(
            try FaultHarness.request(server, "/missing", to: .file(destination)))

        // WHEN its result is awaited
        var thrown: DownloadError?
        do {
            _ = try await download.result()
        } catch {
            thrown = error
        }

        // THEN it is an HTTP status error carrying 404, tried once, and the directory stays empty
        #expect(thrown?.category == .httpStatus)
        #expect(thrown?.httpStatus == 404)
        #expect(server.requests.count == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test("a persistent 500 is retried, then fails with its status and writes nothing")
    func serverErrorRetriedThenFails() async throws {
        // GIVEN a resource that always answers 500
        let server = try FaultServer()
        server.setResource(FaultHarness.path, body: TestData.bytes(count: 1024, seed: 43))
        server.setPersistentFaults(FaultHarness.path, [.status(500)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("error.bin")

        // WHEN it is downloaded with two retries
        let watched = try await FaultHarness.run(
            FaultHarness.request(
                server, to: .file(destination), retry: RetryPolicy(maxRetries: 2, baseDelay: 0.05, maxDelay: 0.1)))

        // THEN three attempts were made and the failure carries the status
        #expect(watched.error?.category == .httpStatus)
        #expect(watched.error?.httpStatus == 500)
        #expect(watched.retries.map(\.attempt) == [1, 2])
        #expect(FaultHarness.requests(server).count == 3)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test("a 503 with Retry-After is retried after the asked delay and then completes")
    func retryAfterIsHonoured() async throws {
        // GIVEN a first answer of 503 with Retry-After: 1
        let server = try FaultServer()
        let body = TestData.bytes(count: 512 << 10, seed: 44)
        server.setResource(FaultHarness.path, body: body)
        server.enqueueFaults(FaultHarness.path, [.retryAfter(status: 503, value: "1")])
        let directory = try TemporaryDirectory()
        let destination = directory.file("later.bin")
        let clock = ContinuousClock()
        let startedAt = clock.now

        // WHEN it is downloaded
        let watched = try await FaultHarness.run(FaultHarness.request(server, to: .file(destination)))

        // THEN the retry waited the server's second rather than the 50 ms backoff, and the file is complete
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        #expect(watched.retries.map(\.delay) == [1])
        #expect(clock.now - startedAt >= .milliseconds(950))
        FaultHarness.expectFile(destination, equals: body)
        #expect(FaultHarness.requests(server).count == 2)
    }

    @Test(
        "a hostile Content-Disposition name lands inside the directory under a safe name",
        arguments: [
            ("attachment; filename=\"../../evil.txt\"", "evil.txt"),
            ("attachment; filename*=UTF-8''%2e%2e%2fx", "x"),
        ])
    func hostileContentDisposition(header: String, expectedName: String) async throws {
        // GIVEN a response naming a file outside the target directory
        let server = try FaultServer()
        let body = TestData.bytes(count: 300_000, seed: 45)
        server.setResource(FaultHarness.path, body: body)
        server.setPersistentFaults(FaultHarness.path, [.contentDisposition(header)])
        let root = try TemporaryDirectory()
        let outDirectory = root.file("a/b/out")

        // WHEN it is downloaded into a directory two levels below the root
        let watched = try await FaultHarness.run(FaultHarness.request(server, to: .directory(outDirectory)))

        // THEN the file is inside that directory under the sanitized name, and nothing else exists
        let completion = try #require(watched.completion, "failed: \(String(describing: watched.error))")
        #expect(completion.path == outDirectory + "/" + expectedName)
        FaultHarness.expectFile(outDirectory + "/" + expectedName, equals: body)
        #expect(try FileManager.default.contentsOfDirectory(atPath: outDirectory) == [expectedName])
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.file("a/b")) == ["out"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.file("a")) == ["b"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.path) == ["a"])
        #expect(FaultHarness.requests(server).count == 1)
    }

    @Test("a directory download whose server-chosen name already exists is refused, leaving that file alone")
    func directoryNameExists() async throws {
        // GIVEN a directory already holding the file the response will name
        let server = try FaultServer()
        server.setResource(
            FaultHarness.path, body: TestData.bytes(count: 100_000, seed: 46),
            extraHeaders: [("Content-Disposition", "attachment; filename=\"taken.txt\"")])
        let directory = try TemporaryDirectory()
        let original = TestData.bytes(count: 1000, seed: 47)
        try FaultHarness.write(original, to: directory.file("taken.txt"))

        // WHEN the resource is downloaded into that directory with the default policy
        let watched = try await FaultHarness.run(FaultHarness.request(server, to: .directory(directory.path)))

        // THEN it fails as an existing destination, the file is untouched, and no partial is left
        #expect(watched.error?.category == .destinationExists)
        FaultHarness.expectFile(directory.file("taken.txt"), equals: original)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["taken.txt"])
    }
}
