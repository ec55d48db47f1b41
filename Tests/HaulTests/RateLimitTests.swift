import Foundation
import HaulCore
import HaulTestSupport
import Testing

@testable import Haul

@Suite("Rate limit shared across downloads", .serialized)
struct RateLimitTests {
    @Test func aLimiterLimitsWhenItOrAnEnclosingOneHasALimit() {
        let unlimited = RateLimiter(bytesPerSecond: 0)
        #expect(!unlimited.isLimiting)
        // haul serve's shape: every download's limiter, most without a limit, within the overall one
        let overall = RateLimiter(bytesPerSecond: 0)
        let own = RateLimiter(bytesPerSecond: 0, within: overall)
        #expect(!own.isLimiting)
        overall.setLimit(bytesPerSecond: 1 << 20)
        #expect(own.isLimiting)
        overall.setLimit(bytesPerSecond: 0)
        own.setLimit(bytesPerSecond: 4096)
        #expect(own.isLimiting && !overall.isLimiting)
    }

    @Test func aLimitIsKeptAsTheExactIntegerItWasGivenAndStoredSo() throws {
        // GIVEN limits at the edges of Int64 (kept as a Double, Int64.max became 2^63, which
        // trapped when converted back) and one no Double holds exactly
        for limit in [Int64.max, Int64.max - 1, 9_007_199_254_740_993, 1] {
            let limiter = RateLimiter(bytesPerSecond: limit)
            // THEN it reads back exactly, limits, and a queued download stores exactly that
            #expect(limiter.bytesPerSecond == limit)
            #expect(limiter.isLimiting)
            #expect(limiter.secondsBeforeNextChunk() >= 0)
            var request = DownloadRequest(url: try #require(URL(string: "http://127.0.0.1:9/f")), destination: .directory("/tmp"))
            request.rateLimiter = limiter
            #expect(QueuedRequest.storedOptions(request).bytesPerSecond == limit)
            limiter.setLimit(bytesPerSecond: limit - 1)
            #expect(limiter.bytesPerSecond == limit - 1)
        }
        // AND none of its own reads as 0, whatever was given
        for none in [Int64(0), -1, Int64.min] {
            #expect(RateLimiter(bytesPerSecond: none).bytesPerSecond == 0)
        }
    }

    @Test func oneDownloadKeepsToTheLimit() async throws {
        // GIVEN a 4 MiB resource served as fast as loopback allows and a 2 MiB/s limit
        let server = try FaultServer()
        defer { server.stop() }
        let body = TestData.bytes(count: 4 << 20, seed: 5)
        server.setResource("/f", body: body)
        let directory = try TemporaryDirectory()
        var request = DownloadRequest(url: try #require(URL(string: server.url("/f"))), destination: .file(directory.file("f")))
        request.rateLimiter = RateLimiter(bytesPerSecond: 2 << 20)

        // WHEN it downloads
        let started = ContinuousClock.now
        _ = try await Downloader().download(request).result()
        let seconds = Self.seconds(ContinuousClock.now - started)

        // THEN it took at least what the limit allows (the first burst aside), and the file is exact
        #expect(seconds >= 1.85, "4 MiB at 2 MiB/s took \(seconds) s")
        #expect(seconds < 4, "4 MiB at 2 MiB/s took \(seconds) s")
        #expect(FileManager.default.contents(atPath: directory.file("f")).map(Array.init) == body)
    }

    @Test func concurrentDownloadsShareOneBudget() async throws {
        // GIVEN two 3 MiB resources run two at a time under one 2 MiB/s limit
        let server = try FaultServer()
        defer { server.stop() }
        let bodies = [TestData.bytes(count: 3 << 20, seed: 6), TestData.bytes(count: 3 << 20, seed: 7)]
        server.setResource("/a", body: bodies[0])
        server.setResource("/b", body: bodies[1])
        let directory = try TemporaryDirectory()
        let state = try TemporaryDirectory()
        let queue = try DownloadQueue(stateDirectory: state.path)
        let ids = try queue.add([
            DownloadRequest(url: try #require(URL(string: server.url("/a"))), destination: .file(directory.file("a"))),
            DownloadRequest(url: try #require(URL(string: server.url("/b"))), destination: .file(directory.file("b"))),
        ])

        // WHEN the queue runs both at once
        let started = ContinuousClock.now
        let summary = await queue.run(QueueRunOptions(maxConcurrent: 2, rateLimiter: RateLimiter(bytesPerSecond: 2 << 20)), only: Set(ids))
        let seconds = Self.seconds(ContinuousClock.now - started)

        // THEN together they kept to the one limit: 6 MiB took about 3 s, not 1.5 s
        #expect(Set(summary.completed) == Set(ids))
        #expect(seconds >= 2.8, "6 MiB at 2 MiB/s took \(seconds) s")
        #expect(seconds < 6, "6 MiB at 2 MiB/s took \(seconds) s")
        #expect(FileManager.default.contents(atPath: directory.file("b")).map(Array.init) == bodies[1])
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
