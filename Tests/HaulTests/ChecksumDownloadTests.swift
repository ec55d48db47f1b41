import Foundation
import HaulChecksum
import HaulCore
import HaulStore
import HaulTestSupport
import Testing

@testable import Haul

@Suite("Checksums while downloading", .serialized)
struct ChecksumDownloadTests {
    let body = TestData.bytes(count: 3_000_000, seed: 41)

    func sha256(_ bytes: [UInt8]) -> String {
        let hash = StreamingHash(.sha256)
        bytes.withUnsafeBytes { hash.update($0) }
        return hash.finalizeHex()
    }

    func request(_ server: FaultServer, _ destination: String, expected: String?) throws -> DownloadRequest {
        var request = DownloadRequest(url: try #require(URL(string: server.url("/file.bin"))), destination: .file(destination))
        request.checksum = Checksum(algorithm: .sha256, expectedHex: expected)
        request.retry = RetryPolicy(maxRetries: 0)
        return request
    }

    @Test func matchingDigestIsReportedInTheCompletion() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        server.setResource("/file.bin", body: body)
        let directory = try TemporaryDirectory()
        let completion = try await Downloader().download(try request(server, directory.file("f"), expected: sha256(body))).result()
        #expect(completion.digest == "sha256:" + sha256(body))
        #expect(FileManager.default.contents(atPath: directory.file("f")).map(Array.init) == body)
    }

    @Test func mismatchKeepsThePartialAndNamesBothDigests() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        server.setResource("/file.bin", body: body)
        let directory = try TemporaryDirectory()
        let wrong = String(repeating: "0", count: 64)
        let download = Downloader().download(try request(server, directory.file("f"), expected: wrong))
        do throws(DownloadError) {
            _ = try await download.result()
            Issue.record("a wrong checksum was accepted")
        } catch {
            #expect(error.category == .checksum)
            #expect(error.message.contains(wrong))
            #expect(error.message.contains(sha256(body)))
        }
        #expect(!FileManager.default.fileExists(atPath: directory.file("f")))
        // set aside, never to be continued: the next run starts afresh
        #expect(FileManager.default.contents(atPath: directory.file("f") + ".haul-rejected").map(Array.init) == body)
        #expect(!FileManager.default.fileExists(atPath: directory.file("f") + ".haul-partial"))
    }

    @Test func resumeContinuesFromTheSavedHashStateWithoutRereading() async throws {
        // GIVEN a first run that drops after 1 MB and keeps a record with the hash state
        let server = try FaultServer()
        defer { server.stop() }
        server.setResource("/file.bin", body: body)
        server.enqueueFaults("/file.bin", [.dropAfter(bytes: 1_000_000)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("f")
        await #expect(throws: DownloadError.self) {
            _ = try await Downloader().download(try request(server, destination, expected: sha256(body))).result()
        }
        let record = try #require(try RecordFile(path: destination + ".haul-resume").load())
        let saved = try #require(record.hashState)
        #expect(saved.algorithm == .sha256)
        #expect(saved.length == 1_000_000)

        // WHEN the prefix on disk is altered behind Haul's back and the download resumes
        let handle = try #require(FileHandle(forUpdatingAtPath: destination + ".haul-partial"))
        try handle.write(contentsOf: Data(repeating: 0xAA, count: 16))
        try handle.close()
        let completion = try await Downloader().download(try request(server, destination, expected: sha256(body))).result()

        // THEN the digest came from the saved state (the altered prefix was not read again)
        #expect(completion.digest == "sha256:" + sha256(body))
        #expect(server.requests.last?.header("Range") == "bytes=1000000-")
    }

    @Test func unusableSavedStateMeansOneRehashOfThePrefix() async throws {
        // GIVEN a partial whose record carries a hash state from another OpenSSL build
        let server = try FaultServer()
        defer { server.stop() }
        server.setResource("/file.bin", body: body)
        server.enqueueFaults("/file.bin", [.dropAfter(bytes: 1_500_000)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("f")
        await #expect(throws: DownloadError.self) {
            _ = try await Downloader().download(try request(server, destination, expected: nil)).result()
        }
        let file = RecordFile(path: destination + ".haul-resume")
        var record = try #require(try file.load())
        let saved = try #require(record.hashState)
        record.hashState = SavedHashState(algorithm: .sha256, length: saved.length, openSSLVersion: saved.openSSLVersion &+ 1, context: saved.context)
        try file.save(record)

        // WHEN it resumes THEN the digest is still right: the prefix was hashed again from disk
        let completion = try await Downloader().download(try request(server, destination, expected: sha256(body))).result()
        #expect(completion.digest == "sha256:" + sha256(body))
    }
}
