import Foundation
import HaulCore
import HaulTestSupport
import Testing

@testable import Haul

/// Every restart and retry, wherever it starts, counts against one bound.
@Suite("restarts in place are bounded")
struct DownloadRestartBoundTests {
    @Test("a server that ignores Range and drops every connection makes the download end, in bounded time")
    func ignoredRangeAndDropsEndTheRun() async throws {
        // GIVEN a server that answers 200 with the whole 8 MiB (an ETag, a length) and drops each
        // connection after 1 MiB
        let server = try FaultServer()
        server.setResource(FaultHarness.path, body: TestData.bytes(count: 8 << 20, seed: 19))
        server.setPersistentFaults(FaultHarness.path, [.ignoreRange, .dropAfter(bytes: 1 << 20)])
        let directory = try TemporaryDirectory()

        // WHEN the file is downloaded with retries
        let watched = try await FaultHarness.run(
            FaultHarness.request(server, to: .file(directory.file("f.bin"))), timeout: 60)

        // THEN it ends with a clear error after a bounded number of requests (it ran forever:
        // each 200 restarted in place uncounted, and its bytes reset the retry budget)
        // (the retries run out first, or, when segments ran as the 200 came and the restart went
        // through the machine on the pool rather than in place on the loop, the restarts: either
        // way the failure says why each attempt began anew)
        let error = try #require(watched.error)
        #expect(error.category == .network || error.category == .protocolViolation, "\(error.message)")
        #expect(error.message.contains("restarting from byte 0"), "\(error.message)")
        let requests = FaultHarness.requests(server).count
        #expect(requests <= 12, "\(requests) requests")
    }

    @Test("with more retries than restarts, the restart budget ends it")
    func restartBudgetEndsTheRun() async throws {
        let server = try FaultServer()
        server.setResource(FaultHarness.path, body: TestData.bytes(count: 4 << 20, seed: 20))
        server.setPersistentFaults(FaultHarness.path, [.ignoreRange, .dropAfter(bytes: 1 << 20)])
        let directory = try TemporaryDirectory()
        var request = try FaultHarness.request(server, to: .file(directory.file("f.bin")))
        request.retry = RetryPolicy(maxRetries: 50, baseDelay: 0.01, maxDelay: 0.02)

        let watched = try await FaultHarness.run(request, timeout: 60)

        let error = try #require(watched.error)
        #expect(error.category == .protocolViolation, "\(error.message)")
        #expect(error.message.contains("gave up after"), "\(error.message)")
        #expect(FaultHarness.requests(server).count <= 6)
    }
}
