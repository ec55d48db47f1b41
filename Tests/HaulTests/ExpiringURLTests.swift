import Foundation
import HaulCore
import HaulTestSupport
import Testing

@testable import Haul

@Suite("Expiring URLs: a fresh URL from the hook", .serialized)
struct ExpiringURLTests {
    let body = TestData.bytes(count: 2_000_000, seed: 77)

    @Test func freshURLContinuesWhenTheValidatorsMatch() async throws {
        // GIVEN a signed URL that drops mid-way, then answers 403 (expired), and a fresh URL of the same file
        let server = try FaultServer()
        defer { server.stop() }
        server.setResource("/signed-old", body: body, etag: "\"v1\"")
        server.setResource("/signed-new", body: body, etag: "\"v1\"")
        server.setPersistentFaults("/signed-old", [.status(403)])
        server.enqueueFaults("/signed-old", [.dropAfter(bytes: 700_000)])
        let directory = try TemporaryDirectory()
        let fresh = try #require(URL(string: server.url("/signed-new")))
        var request = DownloadRequest(url: try #require(URL(string: server.url("/signed-old"))), destination: .file(directory.file("f")))
        request.retry = RetryPolicy(maxRetries: 2, baseDelay: 0.01, maxDelay: 0.01)
        request.urlRefresher = { _, status in status == 403 ? fresh : nil }

        // WHEN it downloads
        let completion = try await Downloader().download(request).result()

        // THEN it resumed through the fresh URL with Range and If-Range, and the file is exact
        #expect(FileManager.default.contents(atPath: directory.file("f")).map(Array.init) == body)
        let resumed = try #require(server.requests.last)
        #expect(resumed.path == "/signed-new")
        #expect(resumed.header("Range") == "bytes=700000-")
        #expect(resumed.header("If-Range") == "\"v1\"")
        #expect(completion.finalURL == fresh)
        #expect(server.bodyBytesSent("/signed-new") == body.count - 700_000)
    }

    @Test func freshURLOfAnotherVersionRestarts() async throws {
        // GIVEN the fresh URL serves a newer version (new ETag)
        let server = try FaultServer()
        defer { server.stop() }
        let newer = TestData.bytes(count: 1_500_000, seed: 78)
        server.setResource("/signed-old", body: body, etag: "\"v1\"")
        server.setResource("/signed-new", body: newer, etag: "\"v2\"")
        server.setPersistentFaults("/signed-old", [.status(410)])
        server.enqueueFaults("/signed-old", [.dropAfter(bytes: 700_000)])
        let directory = try TemporaryDirectory()
        let fresh = try #require(URL(string: server.url("/signed-new")))
        var request = DownloadRequest(url: try #require(URL(string: server.url("/signed-old"))), destination: .file(directory.file("f")))
        request.retry = RetryPolicy(maxRetries: 2, baseDelay: 0.01, maxDelay: 0.01)
        request.urlRefresher = { _, _ in fresh }
        let download = Downloader().download(request)
        var restarts: [RestartReason.Code] = []

        // WHEN it downloads
        for await event in download.events {
            if case .restarted(let reason) = event { restarts.append(reason.code) }
        }

        // THEN the old bytes were never spliced with the new version
        #expect(restarts == [.resourceChanged])
        #expect(FileManager.default.contents(atPath: directory.file("f")).map(Array.init) == newer)
    }

    /// An app's token refresh is async and often on the main actor: the hook awaits it.
    @MainActor final class TokenStore {
        var fresh: URL
        private(set) var refreshes = 0
        init(fresh: URL) { self.fresh = fresh }
        func refresh() async -> URL {
            try? await Task.sleep(for: .milliseconds(50))
            refreshes += 1
            return fresh
        }
    }

    @Test func anAsyncMainActorRefresherIsAwaited() async throws {
        // GIVEN a signed URL that drops mid-way, then answers 403, and a refresher on the main actor
        let server = try FaultServer()
        defer { server.stop() }
        server.setResource("/signed-old", body: body, etag: "\"v1\"")
        server.setResource("/signed-new", body: body, etag: "\"v1\"")
        server.setPersistentFaults("/signed-old", [.status(403)])
        server.enqueueFaults("/signed-old", [.dropAfter(bytes: 700_000)])
        let directory = try TemporaryDirectory()
        let tokens = await TokenStore(fresh: try #require(URL(string: server.url("/signed-new"))))
        var request = DownloadRequest(url: try #require(URL(string: server.url("/signed-old"))), destination: .file(directory.file("f")))
        request.retry = RetryPolicy(maxRetries: 2, baseDelay: 0.01, maxDelay: 0.01)
        request.urlRefresher = { _, _ in await tokens.refresh() }

        // WHEN it downloads
        let completion = try await Downloader().download(request).result()

        // THEN the main actor's answer was awaited and the download went on through it
        #expect(FileManager.default.contents(atPath: directory.file("f")).map(Array.init) == body)
        #expect(completion.finalURL == URL(string: server.url("/signed-new")))
        #expect(await tokens.refreshes == 1)
    }

    @Test func withoutAHookAnExpiredURLFails() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        server.setResource("/signed-old", body: body)
        server.setPersistentFaults("/signed-old", [.status(403)])
        server.enqueueFaults("/signed-old", [.dropAfter(bytes: 700_000)])
        let directory = try TemporaryDirectory()
        var request = DownloadRequest(url: try #require(URL(string: server.url("/signed-old"))), destination: .file(directory.file("f")))
        request.retry = RetryPolicy(maxRetries: 2, baseDelay: 0.01, maxDelay: 0.01)
        let download = Downloader().download(request)
        do throws(DownloadError) {
            _ = try await download.result()
            Issue.record("an expired URL succeeded")
        } catch {
            #expect(error.httpStatus == 403)
        }
        // AND the bytes already downloaded are kept for a later run
        #expect(FileManager.default.fileExists(atPath: directory.file("f") + ".haul-partial"))
    }
}
