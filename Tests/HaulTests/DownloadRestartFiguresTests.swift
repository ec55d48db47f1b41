import Foundation
import Haul
import HaulCore
import HaulTestSupport
import Testing

// What a restart's figures say: bytes thrown away are not "resumed from".
extension DownloadFaultTests {
    @Test("a run that restarts because the file changed resumed from nothing, and says what it discarded")
    func restartFiguresAfterAChangedFile() async throws {
        // GIVEN a first run cut after 1,000,000 bytes of version "v1"
        let server = try FaultServer()
        let new = TestData.bytes(count: 1_500_000, seed: 365)
        server.setResource(FaultHarness.path, body: TestData.bytes(count: 2 << 20, seed: 364))
        server.enqueueFaults(FaultHarness.path, [.dropAfter(bytes: 1_000_000)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("restarted.bin")
        let request = try FaultHarness.request(server, to: .file(destination), retry: FaultHarness.noRetry)
        _ = try await FaultHarness.run(request)

        // WHEN the file becomes "v2" and a second run resumes
        server.enqueueFaults(FaultHarness.path, [.replaceResource(body: new, etag: "\"v2\"", lastModified: nil)])
        let second = try await FaultHarness.run(request)

        // THEN the completion does not count the discarded bytes as resumed
        let completion = try #require(second.completion, "failed: \(String(describing: second.error))")
        #expect(second.restartCodes == [.resourceChanged])
        #expect(completion.resumedFrom == 0)
        #expect(completion.bytes == Int64(new.count))
        // AND the restart says how many bytes it discarded
        let discarded = second.events.compactMap { if case .restarted(let reason) = $0 { reason.discardedBytes } else { nil } }
        #expect(discarded == [1_000_000])
        FaultHarness.expectFile(destination, equals: new)
    }

    @Test("a server that ignores Range on resume: the completion resumed from nothing")
    func restartFiguresWhenRangeIsIgnored() async throws {
        // GIVEN a first run cut after 700,000 bytes
        let server = try FaultServer()
        let body = TestData.bytes(count: 2 << 20, seed: 366)
        server.setResource(FaultHarness.path, body: body)
        server.enqueueFaults(FaultHarness.path, [.dropAfter(bytes: 700_000)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("ignored.bin")
        let request = try FaultHarness.request(server, to: .file(destination), retry: FaultHarness.noRetry)
        _ = try await FaultHarness.run(request)
        // WHEN a second run's resume is answered with the whole body (200)
        server.enqueueFaults(FaultHarness.path, [.ignoreRange])
        let watched = try await FaultHarness.run(request)
        // THEN the completion resumed from nothing: every byte of the file came in the last response
        let completion = try #require(watched.completion, "failed: \(String(describing: watched.error))")
        #expect(completion.resumedFrom == 0)
        #expect(watched.restartCodes == [.serverIgnoredRange])
        let discarded = watched.events.compactMap { if case .restarted(let reason) = $0 { reason.discardedBytes } else { nil } }
        #expect(discarded == [700_000])
    }
}
