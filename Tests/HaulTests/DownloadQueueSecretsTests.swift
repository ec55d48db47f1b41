import Foundation
import HaulCore
import HaulTestSupport
import Synchronization
import Testing

@testable import Haul

/// A long-running queue run (`haul serve`'s) forgets a download's secrets within seconds of its
/// completion: not only its row, every earlier copy in the write-ahead log and the database file.
@Suite("DownloadQueue: secrets leave the files while a long run goes on", .serialized)
struct DownloadQueueSecretsTests {
    @Test(.timeLimit(.minutes(1)))
    func aCompletedDownloadsSecretsLeaveTheFilesWithinSecondsWhileTheRunGoesOn() async throws {
        // GIVEN nginx serving 3 MiB at 1 MiB/s, and a download of it with alice:hunter2@ in its URL
        // and an Authorization header, in a queue run as `haul serve` runs it (no end of its own)
        let work = try TemporaryDirectory(prefix: "haul-queue-secrets")
        try FileManager.default.createDirectory(atPath: work.file("www"), withIntermediateDirectories: true)
        try TestData.writeFile(at: work.file("www/f.bin"), size: 3 << 20, seed: 430)
        let nginx = try NginxServer(documentRoot: work.file("www"), limitRate: "1m")
        defer { nginx.stop() }
        let state = work.file("state")
        let queue = try DownloadQueue(stateDirectory: state)
        let url = try #require(URL(string: nginx.baseURL.replacingOccurrences(of: "http://", with: "http://alice:hunter2@") + "/limited/f.bin"))
        var request = DownloadRequest(url: url, destination: .file(work.file("f.bin")))
        request.headers = HTTPHeaders([HTTPHeaders.Field(name: "Authorization", value: "Bearer TOPSECRET-9c1")])
        request.connections = 1
        let id = try queue.add(request)
        var options = QueueRunOptions(retry: RetryPolicy(maxRetries: 0))
        options.concurrency = QueueConcurrency(limit: 2)
        let ended = Atomic<Bool>(false)
        let run = Task { [options] in
            let summary = await queue.run(options)
            ended.store(true, ordering: .releasing)
            return summary
        }

        // WHEN it completes (a few seconds, with progress written every second)
        let completed = await Self.poll(timeout: 30) { (try? queue.item(id))?.state == .completed }
        #expect(completed)
        let secretsWhileRunning = Self.secretFiles(state)

        // THEN within 5 s neither haul.sqlite nor haul.sqlite-wal holds either secret, while the
        // run still goes on
        let forgotten = await Self.poll(timeout: 5) { Self.secretFiles(state).isEmpty }
        #expect(forgotten, "still holding secrets: \(Self.secretFiles(state)) (at completion: \(secretsWhileRunning))")
        let runEnded = ended.load(ordering: .acquiring)
        #expect(!runEnded, "the run ended by itself")
        queue.stopAll()
        let summary = await run.value
        #expect(summary.completed == [id])
    }

    /// Which of the store's files hold the URL's password or the header's token.
    static func secretFiles(_ state: String) -> [String] {
        ["haul.sqlite", "haul.sqlite-wal"].flatMap { name in
            let data = FileManager.default.contents(atPath: state + "/" + name) ?? Data()
            return ["hunter2", "TOPSECRET-9c1"].filter { data.range(of: Data($0.utf8)) != nil }.map { "\(name): \($0)" }
        }
    }

    static func poll(timeout: Double, _ condition: () -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return condition()
    }
}
