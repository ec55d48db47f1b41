import Foundation
import HaulCore
import HaulTestSupport
import Testing

@testable import Haul

/// A host that refused an extra connection of a download is remembered for the rest of it, across
/// pause and resume (issue 36, item 12).
@Suite("Adaptive connections across pause and resume", .serialized)
struct AdaptiveConnectionsTests {
    @Test(.timeLimit(.minutes(1)))
    func aHostThatRefusedAConnectionIsNotAskedAgainAfterResume() async throws {
        // GIVEN nginx serving a 64 MiB file at 4 MiB/s to one connection per client, fetched with
        // the default (adaptive) connections
        let root = try TemporaryDirectory()
        try TestData.writeFile(at: root.file("big.bin"), size: 64 << 20, seed: 3614)
        let nginx = try NginxServer(documentRoot: root.path, limitRate: "4m")
        defer { nginx.stop() }
        let uri = "/oneconn/big.bin"
        let directory = try TemporaryDirectory()
        let request = DownloadRequest(url: try #require(URL(string: nginx.baseURL + uri)), destination: .file(directory.file("big.bin")))
        let download = Downloader().download(request)
        func refusals() -> Int { nginx.accessLog().filter { $0.uri == uri && $0.status == 503 }.count }
        func paused() async -> Bool {
            for await event in download.events {
                if case .paused = event { return true }
                if event.isTerminal { return false }
            }
            return false
        }

        // WHEN it runs 2.5 s, is paused, resumed, runs 2.5 s more, and is cancelled
        try await Task.sleep(for: .seconds(2.5))
        download.pause()
        #expect(await paused())
        let beforeResume = refusals()
        download.resume()
        try await Task.sleep(for: .seconds(2.5))
        download.cancel()
        _ = try? await download.result()

        // THEN the server refused at most one extra connection in the first run, and none after the resume
        #expect(beforeResume <= 1, "\(nginx.accessLog().map { "\($0.status) \($0.range ?? "-")" })")
        #expect(refusals() == beforeResume, "\(nginx.accessLog().map { "\($0.status) \($0.range ?? "-")" })")
        let resumed = nginx.accessLog().filter { $0.uri == uri && $0.status == 206 }
        #expect(!resumed.isEmpty, "the resume asked for the rest: \(nginx.accessLog().map { "\($0.status) \($0.range ?? "-")" })")
    }
}
