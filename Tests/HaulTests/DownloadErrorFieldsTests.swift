import Foundation
import Haul
import HaulCore
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What an app reads off a failure without parsing its message: the URL, the file, the room
/// needed and available, the system's and the engine's codes, the bytes kept and where, and the
/// settings that would let the download go on (named as the library names them, never as flags).
@Suite("DownloadError fields")
struct DownloadErrorFieldsTests {
    @Test func anExistingFileNamesItsPathAndTheTwoSettingsThatWouldTakeIt() async throws {
        // GIVEN a file already at the destination
        let server = try FaultServer()
        server.setResource(FaultHarness.path, body: TestData.bytes(count: 10_000, seed: 1))
        let directory = try TemporaryDirectory()
        let destination = directory.file("exists.bin")
        try FaultHarness.write(TestData.bytes(count: 100, seed: 2), to: destination)

        // WHEN it is downloaded with the default policy
        let request = try FaultHarness.request(server, to: .file(destination))
        let error = try #require(try await FaultHarness.run(request).error)

        // THEN the error says which file, for which URL, and which settings would take it
        #expect(error.category == .destinationExists)
        #expect(error.path == destination)
        #expect(error.url == request.url)
        #expect(error.hints == [.overwrite, .continueExisting])
        #expect(error.message == "\(destination) already exists; use existingFile: .overwrite to replace it or existingFile: .continueIt to continue it")
        #expect(
            error.message(naming: SettingNames([.overwrite: "--force", .continueExisting: "-c"])).hasSuffix("use --force to replace it or -c to continue it"))
        #expect(error.kept == nil)
    }

    @Test func aRefusedConnectionCarriesLibcurlsCode() async throws {
        // GIVEN a port nothing listens on
        let port = try Self.closedPort()
        let directory = try TemporaryDirectory()
        var request = DownloadRequest(
            url: try #require(URL(string: "http://127.0.0.1:\(port)/f")), destination: .file(directory.file("f")),
            retry: FaultHarness.noRetry)
        request.transfer.connectTimeout = 5

        // WHEN it is downloaded
        let error = try #require(try await FaultHarness.run(request).error)

        // THEN the failure is a network one with CURLE_COULDNT_CONNECT (7), and nothing was kept
        #expect(error.category == .network)
        #expect(error.engineCode == 7, "\(error)")
        #expect(error.systemError == nil)
        #expect(error.url == request.url)
        #expect(error.kept == nil)
        #expect(error.hints.isEmpty)
    }

    @Test func aDroppedTransferSaysWhereItsBytesAreKept() async throws {
        // GIVEN a server that drops the connection after 300,000 of 1,000,000 bytes
        let server = try FaultServer()
        server.setResource(FaultHarness.path, body: TestData.bytes(count: 1_000_000, seed: 3))
        server.enqueueFaults(FaultHarness.path, [.dropAfter(bytes: 300_000)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("dropped.bin")

        // WHEN it is downloaded without retries
        let request = try FaultHarness.request(server, to: .file(destination), retry: FaultHarness.noRetry)
        let error = try #require(try await FaultHarness.run(request).error)

        // THEN the error says the bytes are kept in the partial, and how many
        #expect(error.category == .network)
        let kept = try #require(error.kept, "\(error)")
        #expect(kept.path == destination + ".haul-partial")
        #expect(kept.bytes == 300_000)
        #expect(try FileManager.default.attributesOfItem(atPath: kept.path)[.size] as? Int == 300_000)
        #expect(error.engineCode != nil)
    }

    @Test func aFileOverTheSizeLimitSaysItsSizeAndTheLimit() async throws {
        // GIVEN a 200,000-byte resource and a 100,000-byte limit
        let server = try FaultServer()
        server.setResource(FaultHarness.path, body: TestData.bytes(count: 200_000, seed: 4))
        let directory = try TemporaryDirectory()
        var request = try FaultHarness.request(server, to: .file(directory.file("big.bin")), retry: FaultHarness.noRetry)
        request.maxSize = 100_000

        // WHEN it is downloaded
        let error = try #require(try await FaultHarness.run(request).error)

        // THEN needed and available are the file's size and the limit, and the hint is maxSize
        #expect(error.category == .tooLarge)
        #expect(error.space == DownloadError.Space(needed: 200_000, available: 100_000))
        #expect(error.hints == [.maxSize])
        #expect(!error.message.contains("--"), "\(error)")
    }

    @Test func notEnoughRoomForTheMarginSaysNeededAndAvailable() async throws {
        // GIVEN a margin no disk has
        let server = try FaultServer()
        server.setResource(FaultHarness.path, body: TestData.bytes(count: 50_000, seed: 5))
        let directory = try TemporaryDirectory()
        var request = try FaultHarness.request(server, to: .file(directory.file("f.bin")), retry: FaultHarness.noRetry)
        request.minFreeSpace = Int64.max / 4

        // WHEN it is downloaded
        let error = try #require(try await FaultHarness.run(request).error)

        // THEN the error names the directory, the bytes needed (body plus margin) and those available
        #expect(error.category == .io)
        #expect(error.path == directory.path)
        let space = try #require(error.space, "\(error)")
        #expect(space.needed == 50_000 + Int64.max / 4)
        #expect(space.available > 0 && space.available < space.needed)
        #expect(error.hints == [.minFreeSpace])
    }

    @Test func aFullDiskCarriesENOSPCAndTheBytesKept() async throws {
        // GIVEN a 3 MiB body without a length and a 2 MiB file system (root mounts a tmpfs)
        let server = try FaultServer()
        server.setResource(FaultHarness.path, body: TestData.bytes(count: 3 << 20, seed: 6))
        server.enqueueFaults(FaultHarness.path, [.chunked])
        let small = try SmallFileSystem(sizeBytes: 2 << 20)
        defer { small.unmount() }
        var request = try FaultHarness.request(server, to: .file(small.file("f")), retry: FaultHarness.noRetry)
        request.minFreeSpace = 0

        // WHEN it is downloaded
        let error = try #require(try await FaultHarness.run(request).error)

        // THEN errno is ENOSPC, and the bytes written so far are kept in the partial
        #expect(error.category == .io)
        #expect(error.systemError == ENOSPC, "\(error)")
        #expect(error.path == small.file("f") + ".haul-partial")
        let kept = try #require(error.kept, "\(error)")
        #expect(kept.path == small.file("f") + ".haul-partial")
        #expect(kept.bytes > 0 && kept.bytes <= 2 << 20)
    }

    /// A loopback port that was free a moment ago (bound, then closed).
    static func closedPort() throws -> Int {
        let server = try FaultServer()
        let port = server.port
        server.stop()
        return Int(port)
    }
}
