import Foundation
import HaulCore
import HaulTestSupport
import Testing

@testable import Haul

/// `DownloadOptions.usesRemoteTime` (curl's `-R`, aria2's `remote-time`): the finished file takes
/// the server's `Last-Modified` time, downloaded at once and through the queue, which keeps the
/// option with the rest of the download's options.
@Suite("Remote time: the finished file takes the server's Last-Modified")
struct RemoteTimeTests {
    static let stated = "Sun, 06 Nov 1994 08:49:37 GMT"
    static let statedSeconds: TimeInterval = 784_111_777

    private static func server() throws -> FaultServer {
        let server = try FaultServer()
        server.setResource(FaultHarness.path, body: TestData.bytes(count: 200_000, seed: 77), etag: "\"rt\"", lastModified: stated)
        return server
    }

    private static func modified(_ path: String) throws -> TimeInterval {
        let date = try #require(try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date)
        return date.timeIntervalSince1970
    }

    @Test("GIVEN a server that states Last-Modified WHEN downloaded with usesRemoteTime THEN the file has that time; without it, the time of writing")
    func aDownloadTakesTheServersTime() async throws {
        let server = try Self.server()
        let directory = try TemporaryDirectory()
        var request = try FaultHarness.request(server, to: .file(directory.file("remote.bin")))
        request.usesRemoteTime = true
        let plain = try FaultHarness.request(server, to: .file(directory.file("plain.bin")))

        let remote = try await FaultHarness.run(request)
        let written = try await FaultHarness.run(plain)

        #expect(remote.completion != nil, "failed: \(String(describing: remote.error))")
        #expect(written.completion != nil, "failed: \(String(describing: written.error))")
        #expect(try Self.modified(directory.file("remote.bin")) == Self.statedSeconds)
        #expect(try Self.modified(directory.file("plain.bin")) > Date().timeIntervalSince1970 - 3600)
    }

    @Test("GIVEN a queued download with usesRemoteTime WHEN the queue runs it THEN the option was stored and read back: the file has the server's time")
    func aQueuedDownloadKeepsTheOption() async throws {
        let server = try Self.server()
        let directory = try TemporaryDirectory()
        let queue = try DownloadQueue(stateDirectory: directory.file("state"))
        var request = try FaultHarness.request(server, to: .file(directory.file("queued.bin")))
        request.usesRemoteTime = true
        let id = try queue.add(request)

        let summary = await queue.run(QueueRunOptions(retry: RetryPolicy(maxRetries: 0)))

        #expect(summary.completed == [id], "\(summary.failed.map(\.error))")
        #expect(try queue.storedOptions(id)?.usesRemoteTime == true)
        #expect(try Self.modified(directory.file("queued.bin")) == Self.statedSeconds)
    }
}
