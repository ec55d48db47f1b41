import Foundation
import HaulCore
import HaulEngine
import HaulStore
import HaulTestSupport
import Testing

@testable import Haul

/// A queue run of 1,000 downloads through the one event loop, with faults on a sixth of them:
/// every file must arrive bit-exact, whatever the loop had to retry.
@Suite("Event loop: 1,000 downloads with faults", .serialized)
struct EventLoopFaultsTests {
    @Test func aThousandDownloadsWithDropsStallsAndRetryAfterAllArriveExact() async throws {
        // GIVEN 1,000 files of 2-8 KiB; every 18th drops its first response halfway, every 18th
        // (offset 6) stalls it for 5 s, every 18th (offset 12) answers 503 with Retry-After: 1 first
        let server = try FaultServer()
        defer { server.stop() }
        let count = 1000
        var bodies: [[UInt8]] = []
        for index in 0..<count {
            let body = TestData.bytes(count: 2048 + (index * 61) % 6144, seed: UInt64(index + 1))
            bodies.append(body)
            server.setResource("/f\(index)", body: body)
            switch index % 18 {
            case 0: server.enqueueFaults("/f\(index)", [.dropAfter(bytes: body.count / 2)])
            case 6: server.enqueueFaults("/f\(index)", [.stall(afterBytes: 1000, seconds: 5)])
            case 12: server.enqueueFaults("/f\(index)", [.retryAfter(status: 503, value: "1")])
            default: break
            }
        }
        let directory = try TemporaryDirectory()
        let state = try TemporaryDirectory()
        let queue = try DownloadQueue(stateDirectory: state.path)
        let requests = try (0..<count).map { index in
            DownloadRequest(url: try #require(URL(string: server.url("/f\(index)"))), destination: .file(directory.file("f\(index)")))
        }
        let ids = try queue.add(requests)
        var options = QueueRunOptions(maxConcurrent: 16, retry: RetryPolicy(maxRetries: 3, baseDelay: 0.05, maxDelay: 0.2))
        options.transfer.stallTimeout = 1

        // WHEN the queue runs them 16 at a time
        let summary = await queue.run(options, only: Set(ids))

        // THEN every one completed, bit-exact, and each fault was met
        #expect(summary.completed.count == count, "failed: \(summary.failed.prefix(3).map { ($0.id, $0.error.message) })")
        var wrong: [Int] = []
        for index in 0..<count where FileManager.default.contents(atPath: directory.file("f\(index)")).map(Array.init) != bodies[index] {
            wrong.append(index)
        }
        #expect(wrong.isEmpty, "not exact: \(wrong.prefix(10))")
        for index in [0, 6, 12] {
            #expect(server.requests.filter { $0.path == "/f\(index)" }.count >= 2, "/f\(index) was not retried")
        }
        // AND nothing is left beside the files: no partial, record or lock
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix(".") }
        #expect(left.isEmpty, "\(left.prefix(5))")
    }
}
