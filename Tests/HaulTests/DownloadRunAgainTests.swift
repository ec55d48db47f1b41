import Foundation
import Haul
import HaulCore
import HaulTestSupport
import Testing

// The same request again after it completed.
extension DownloadFaultTests {
    @Test("the same request after completion completes at once, from the file in place, without a request")
    func sameRequestAfterCompletion() async throws {
        // GIVEN a download run to completion
        let server = try FaultServer()
        let body = TestData.bytes(count: 250_000, seed: 361)
        server.setResource(FaultHarness.path, body: body)
        let directory = try TemporaryDirectory()
        let destination = directory.file("done.bin")
        let first = try await FaultHarness.run(FaultHarness.request(server, to: .file(destination)))
        #expect(first.completion != nil, "failed: \(String(describing: first.error))")
        let requestsAfterFirst = server.requests.count

        // WHEN the same request runs again
        let again = try await FaultHarness.run(FaultHarness.request(server, to: .file(destination)))

        // THEN it completes without a request or a byte fetched, and says the file was already complete
        let completion = try #require(again.completion, "failed: \(String(describing: again.error))")
        #expect(server.requests.count == requestsAfterFirst)
        #expect(completion.bytes == Int64(body.count))
        #expect(completion.bytesTransferred == 0)
        #expect(completion.alreadyComplete)
        #expect(first.completion?.alreadyComplete == false)
        FaultHarness.expectFile(destination, equals: body)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["done.bin"])
    }

    @Test("a finished file replaced by another of the same size is refused as any other file")
    func replacedFinishedFileRefused() async throws {
        // GIVEN a download run to completion, then its file replaced (another inode, same size)
        let server = try FaultServer()
        let body = TestData.bytes(count: 120_000, seed: 362)
        server.setResource(FaultHarness.path, body: body)
        let directory = try TemporaryDirectory()
        let destination = directory.file("swapped.bin")
        _ = try await FaultHarness.run(FaultHarness.request(server, to: .file(destination)))
        let replacement = TestData.bytes(count: body.count, seed: 363)
        try FaultHarness.write(replacement, to: directory.file("new"))
        #expect(rename(directory.file("new"), destination) == 0)
        let requestsBefore = server.requests.count

        // WHEN the same request runs again
        let again = try await FaultHarness.run(FaultHarness.request(server, to: .file(destination)))

        // THEN it is refused before any request, and the file is untouched
        #expect(again.error?.category == .destinationExists)
        #expect(server.requests.count == requestsBefore)
        FaultHarness.expectFile(destination, equals: replacement)
    }
}
