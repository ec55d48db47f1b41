import Foundation
import Haul
import HaulCore
import HaulTestSupport
import Testing

/// The free-space margin: a hint names it only when lowering it would help, and the default one
/// scales with the disk. On tmpfs mounts of a known size (root mounts them).
@Suite("The free-space margin and its hint", .serialized)
struct DownloadSpaceHintTests {
    @Test func aFileLargerThanTheDiskHintsNoMargin() async throws {
        // GIVEN a 3 MiB file announced with its length, and a 2 MiB disk
        let server = try FaultServer()
        server.setResource(FaultHarness.path, body: TestData.bytes(count: 3 << 20, seed: 367))
        let small = try SmallFileSystem(sizeBytes: 2 << 20)
        defer { small.unmount() }
        let request = try FaultHarness.request(server, to: .file(small.file("f")), retry: FaultHarness.noRetry)

        // WHEN it is downloaded with the default margin
        let error = try #require(try await FaultHarness.run(request).error)

        // THEN it is refused for want of space, and no setting is hinted: no margin makes it fit
        #expect(error.category == .io)
        #expect(error.space != nil)
        #expect(error.hints.isEmpty, "\(error.hints): \(error.message)")
    }

    @Test func aMarginThatIsTheObstacleIsHinted() async throws {
        // GIVEN a 1 MiB file and a 2 MiB disk, with a 4 MiB margin asked for
        let server = try FaultServer()
        server.setResource(FaultHarness.path, body: TestData.bytes(count: 1 << 20, seed: 368))
        let small = try SmallFileSystem(sizeBytes: 2 << 20)
        defer { small.unmount() }
        var request = try FaultHarness.request(server, to: .file(small.file("f")), retry: FaultHarness.noRetry)
        request.minFreeSpace = 4 << 20

        // WHEN it is downloaded
        let error = try #require(try await FaultHarness.run(request).error)

        // THEN the margin is hinted: lowering it would let the file fit
        #expect(error.hints == [.minFreeSpace], "\(error.message)")
    }

    @Test func theDefaultMarginLetsASmallFileOntoANearlyFullSmallDisk() async throws {
        // GIVEN a 1 KB file and a 2 MiB disk (less free than a fixed 16 MiB margin)
        let server = try FaultServer()
        let body = TestData.bytes(count: 1000, seed: 369)
        server.setResource(FaultHarness.path, body: body)
        let small = try SmallFileSystem(sizeBytes: 2 << 20)
        defer { small.unmount() }
        let request = try FaultHarness.request(server, to: .file(small.file("f")), retry: FaultHarness.noRetry)

        // WHEN it is downloaded with the default margin
        let watched = try await FaultHarness.run(request)

        // THEN it completes: the default margin scales with the disk
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        FaultHarness.expectFile(small.file("f"), equals: body)
    }
}
