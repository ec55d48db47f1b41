import Foundation
import HaulCore
import HaulTestSupport
import Testing

@testable import Haul

/// Validators are compared as the bytes the server sent: two ETags that differ only in bytes that
/// are not UTF-8 are two versions, never one.
@Suite("validators that are not UTF-8")
struct DownloadValidatorBytesTests {
    static func tag(_ byte: UInt8) -> String { "\"v" + String(FaultServer.rawByte(byte)) + "\"" }

    @Test(arguments: [TransportEngine.curl])
    func twoETagsThatDifferInInvalidUTF8BytesAreNeverSpliced(engine: TransportEngine) async throws {
        // GIVEN a first run cut after 100 kB of version A (ETag "v\xFF")
        let server = try FaultServer()
        let a = TestData.bytes(count: 600_000, seed: 241)
        let b = TestData.bytes(count: 600_000, seed: 242)
        server.setResource(FaultHarness.path, body: a, etag: Self.tag(0xFF))
        server.enqueueFaults(FaultHarness.path, [.dropAfter(bytes: 100_000)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("f.bin")
        var request = try FaultHarness.request(server, to: .file(destination), retry: FaultHarness.noRetry)
        request.connections = 1
        let first = try await FaultHarness.run(request, engine: engine)
        #expect(first.error != nil)

        // WHEN the file changes to version B (ETag "v\xFE": the same after lossy decoding) on a
        // server that ignores If-Range, and the download resumes
        server.setResource(FaultHarness.path, body: b, etag: Self.tag(0xFE))
        server.setPersistentFaults(FaultHarness.path, [.ignoreIfRange])
        let second = try await FaultHarness.run(request, engine: engine)

        // THEN the file is version B, whole: never A's first bytes with B's rest
        #expect(second.error == nil, "\(second.error?.message ?? "")")
        let written = [UInt8](try #require(FileManager.default.contents(atPath: destination)))
        let isB = written == b
        let spliced = written.count == b.count && Array(written[0..<100_000]) == Array(a[0..<100_000])
        #expect(isB, spliced ? "A's first 100 kB spliced with B's rest" : "neither version: \(written.count) bytes")
        // AND no If-Range went out with bytes Haul could not send as the server wrote them
        let sent = FaultHarness.requests(server).compactMap { $0.header("If-Range") }
        #expect(sent.allSatisfy { $0.unicodeScalars.allSatisfy(\.isASCII) }, "\(sent)")
    }
}
