import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The same download run again after it completed: its own finished file is recognised without a
/// request; a file Haul cannot prove its own is refused as before.
@Suite("haul run again after completion")
struct CLIRunAgainTests {
    @Test func theSameDownloadAgainSucceedsWithoutARequest() throws {
        // GIVEN a file haul downloaded to completion
        let server = try FaultServer()
        let body = TestData.bytes(count: 300_000, seed: 36)
        server.setResource("/again.bin", body: body)
        let directory = try TemporaryDirectory()
        let output = directory.file("again.bin")
        let first = try HaulBinary.run(["-q", "-o", output, server.url("/again.bin")])
        #expect(first.status == 0, "stderr: \(first.stderr)")
        let requestsAfterFirst = server.requests.count
        // WHEN the same command runs again
        let second = try HaulBinary.run(["-o", output, server.url("/again.bin")])
        // THEN it exits 0 at once, asks the server nothing, leaves the file as it was and says so
        #expect(second.status == 0, "stderr: \(second.stderr)")
        #expect(server.requests.count == requestsAfterFirst)
        #expect(Disk.difference(output, body) == nil)
        #expect(second.stderr.contains("already complete"), "stderr: \(second.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["again.bin"])
    }

    @Test func aReplacedFileIsRefusedAsBefore() throws {
        // GIVEN a file haul downloaded, then replaced by another file of the same size and name
        let server = try FaultServer()
        let body = TestData.bytes(count: 200_000, seed: 37)
        server.setResource("/replaced.bin", body: body)
        let directory = try TemporaryDirectory()
        let output = directory.file("replaced.bin")
        #expect(try HaulBinary.run(["-q", "-o", output, server.url("/replaced.bin")]).status == 0)
        let other = directory.file("other")
        try TestData.writeFile(at: other, size: body.count, seed: 99)
        #expect(rename(other, output) == 0)
        let requestsBefore = server.requests.count
        // WHEN the same command runs again
        let again = try HaulBinary.run(["-q", "-o", output, server.url("/replaced.bin")])
        // THEN it is refused (exit 7, destination exists), and the other file is untouched
        #expect(again.status == 7, "stderr: \(again.stderr)")
        #expect(again.stderr.contains("already exists"), "stderr: \(again.stderr)")
        #expect(server.requests.count == requestsBefore)
        #expect(Disk.difference(output, TestData.bytes(count: body.count, seed: 99)) == nil)
    }

    @Test func aModifiedFileIsRefusedAsBefore() throws {
        // GIVEN a file haul downloaded, then changed in place (same inode, one byte appended)
        let server = try FaultServer()
        server.setResource("/edited.bin", body: TestData.bytes(count: 100_000, seed: 38))
        let directory = try TemporaryDirectory()
        let output = directory.file("edited.bin")
        #expect(try HaulBinary.run(["-q", "-o", output, server.url("/edited.bin")]).status == 0)
        let handle = try #require(FileHandle(forWritingAtPath: output))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([0x41]))
        try handle.close()
        // WHEN the same command runs again
        let again = try HaulBinary.run(["-q", "-o", output, server.url("/edited.bin")])
        // THEN it is refused as any file haul cannot prove its own
        #expect(again.status == 7, "stderr: \(again.stderr)")
        #expect(Disk.size(output) == 100_001)
    }

    @Test func anotherURLToTheSameFileIsRefused() throws {
        // GIVEN a file haul downloaded from one URL
        let server = try FaultServer()
        server.setResource("/one.bin", body: TestData.bytes(count: 50_000, seed: 39))
        server.setResource("/two.bin", body: TestData.bytes(count: 50_000, seed: 40))
        let directory = try TemporaryDirectory()
        let output = directory.file("same.bin")
        #expect(try HaulBinary.run(["-q", "-o", output, server.url("/one.bin")]).status == 0)
        // WHEN another URL is downloaded to the same path
        let other = try HaulBinary.run(["-q", "-o", output, server.url("/two.bin")])
        // THEN the finished file of the first request proves nothing for the second: refused
        #expect(other.status == 7, "stderr: \(other.stderr)")
    }

    @Test func aFinishedFileWithAnotherHardLinkIsRefusedAsBefore() throws {
        // GIVEN a file haul downloaded, then given a second name (a hard link)
        let server = try FaultServer()
        server.setResource("/linked.bin", body: TestData.bytes(count: 60_000, seed: 41))
        let directory = try TemporaryDirectory()
        let output = directory.file("linked.bin")
        #expect(try HaulBinary.run(["-q", "-o", output, server.url("/linked.bin")]).status == 0)
        #expect(link(output, directory.file("second-name")) == 0)
        // WHEN the same command runs again
        let again = try HaulBinary.run(["-q", "-o", output, server.url("/linked.bin")])
        // THEN it is refused as a file in the way (haul never opens a file with other names)
        #expect(again.status == 7, "stderr: \(again.stderr)")
    }
}
