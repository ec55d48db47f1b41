import Foundation
import HaulCore
import HaulStore
import HaulTestSupport
import Testing

@testable import Haul

/// The catalog's recipe for an app about to be suspended or quit (Queue.md): stop at a checkpoint,
/// add the same requests at the next launch. What it promises, checked.
@Suite("The suspend-and-relaunch recipe", .serialized)
struct QueueSuspendRecipeTests {
    @Test func stopAllThenTheSameLaunchContinuesEveryDownloadFromItsBytes() async throws {
        // GIVEN three slow downloads, two at a time
        let server = try FaultServer()
        defer { server.stop() }
        let size = 1 << 20
        for index in 0..<3 {
            server.setResource("/s\(index)", body: TestData.bytes(count: size, seed: UInt64(370 + index)))
            server.setPersistentFaults("/s\(index)", [.throttle(bytesPerSecond: 256 << 10)])
        }
        let directory = try TemporaryDirectory()
        let state = try TemporaryDirectory()
        let requests = try (0..<3).map {
            DownloadRequest(url: try #require(URL(string: server.url("/s\($0)"))), destination: .file(directory.file("s\($0)")))
        }
        let first = try DownloadQueue(stateDirectory: state.path)
        let ids = try first.add(requests)
        let run = Task { await first.run(QueueRunOptions(maxConcurrent: 2), only: Set(ids)) }
        try await Task.sleep(for: .milliseconds(700))

        // WHEN the app is about to be suspended: stopAll, and the run awaited
        let asked = ContinuousClock.now
        first.stopAll()
        let summary = await run.value
        // THEN the run returned promptly, the two running downloads are back in the queue, and the
        // third never started
        #expect(ContinuousClock.now - asked < .seconds(3))
        #expect(summary.paused.count == 2 && summary.completed.isEmpty, "\(summary)")
        #expect(try first.items().allSatisfy { $0.state == .queued })
        #expect(!server.requests.contains { $0.path == "/s2" })
        let onDisk = try (0..<2).map { index -> Int in
            let attributes = try FileManager.default.attributesOfItem(atPath: directory.file("s\(index)") + ".haul-partial")
            return try #require(attributes[.size] as? Int)
        }
        #expect(onDisk.allSatisfy { $0 > 0 && $0 < size }, "\(onDisk)")

        // WHEN the app is launched again with the same code
        let second = try DownloadQueue(stateDirectory: state.path)
        #expect(try second.add(requests) == ids)
        let requestsBefore = server.requests.count
        let relaunched = await second.run(QueueRunOptions(maxConcurrent: 3), only: Set(ids))
        // THEN every download completes, the two stopped ones each continued from all of its bytes
        #expect(Set(relaunched.completed) == Set(ids))
        let resumes = server.requests.dropFirst(requestsBefore)
        for index in 0..<2 {
            let resume = try #require(resumes.first { $0.path == "/s\(index)" })
            #expect(resume.header("Range") == "bytes=\(onDisk[index])-")
            #expect(resume.header("If-Range") != nil)
        }
        for index in 0..<3 {
            FaultHarness.expectFile(directory.file("s\(index)"), equals: TestData.bytes(count: size, seed: UInt64(370 + index)))
        }
    }
}
