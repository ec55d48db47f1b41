import Foundation
import HaulCore
import HaulTestSupport
import Testing

@testable import HaulStore

#if canImport(Glibc)
    import Glibc
#endif

/// The proof a finished file carries: what it accepts, and what it refuses.
@Suite("FinishedMark: a finished file's own proof")
struct FinishedMarkTests {
    static let request = FinishedMark.requestKey(of: ResumeRecord(originalURL: "http://h/f", finalURL: "http://h/f"))

    /// A file with `bytes`, marked as `request`'s finished download.
    static func markedFile(_ directory: TemporaryDirectory, _ name: String = "f", bytes: Int = 100) throws -> String {
        let path = directory.file(name)
        try TestData.writeFile(at: path, size: bytes)
        let fd = open(path, O_RDWR)
        defer { close(fd) }
        #expect(FinishedMark.mark(fd, request: request) != nil)
        return path
    }

    @Test func aMarkedFileIsProvenForItsRequestOnly() throws {
        // GIVEN a marked file
        let directory = try TemporaryDirectory()
        let path = try Self.markedFile(directory)
        // THEN it is proven for its request, not another's (another URL, method or range)
        #expect(FinishedMark.provenFinished(at: path, request: Self.request)?.size == 100)
        for other in [
            ResumeRecord(originalURL: "http://h/g", finalURL: "http://h/g"), ResumeRecord(originalURL: "http://h/f", finalURL: "http://h/f", method: "POST"),
            ResumeRecord(originalURL: "http://h/f", finalURL: "http://h/f", range: "0-9"),
        ] {
            #expect(FinishedMark.provenFinished(at: path, request: FinishedMark.requestKey(of: other)) == nil)
        }
    }

    @Test func aChangedOrCopiedFileIsNotProven() throws {
        let directory = try TemporaryDirectory()
        // GIVEN a marked file grown by a byte
        let grown = try Self.markedFile(directory, "grown")
        let fd = open(grown, O_WRONLY | O_APPEND)
        #expect(write(fd, "x", 1) == 1)
        close(fd)
        // AND a marked file copied with its attributes to another inode
        let original = try Self.markedFile(directory, "original")
        let copy = directory.file("copy")
        let copied = try ProcessRunner.run("/bin/cp", ["--preserve=all", original, copy], environment: nil, timeout: 10)
        #expect(copied.status == 0)
        // AND a symlink to a marked file
        let link = directory.file("link")
        #expect(symlink(original, link) == 0)
        // THEN none is proven; the original still is
        #expect(FinishedMark.provenFinished(at: grown, request: Self.request) == nil)
        #expect(FinishedMark.provenFinished(at: copy, request: Self.request) == nil)
        #expect(FinishedMark.provenFinished(at: link, request: Self.request) == nil)
        #expect(FinishedMark.provenFinished(at: original, request: Self.request) != nil)
    }

    @Test(arguments: [
        "", "haul-finished-1", "haul-finished-2 \(String(repeating: "a", count: 64)) 1 2 3 4 5",
        "haul-finished-1 \(String(repeating: "g", count: 64)) 1 2 3 4 5", "haul-finished-1 \(String(repeating: "a", count: 63)) 1 2 3 4 5",
        "haul-finished-1 \(String(repeating: "a", count: 64)) 1 2 3 4", "haul-finished-2 \(String(repeating: "a", count: 64)) 1 2 3 4 5 x",
        "haul-finished-1 \(String(repeating: "a", count: 64)) 1 2 -x 4 5",
        "haul-finished-1  \(String(repeating: "a", count: 64)) 1 2 3 4 5",
        // The first format, well formed: it has no bound on the change time, so it proves nothing.
        "haul-finished-1 \(String(repeating: "a", count: 64)) 1 2 3 4 5",
    ])
    func damagedMarksProveNothing(text: String) {
        #expect(FinishedMark(decoding: text) == nil)
    }

    @Test func aMarkReadsBackAsWritten() throws {
        var info = stat()
        info.st_dev = 7
        info.st_ino = 99
        info.st_size = 12345
        var identity = FileIdentity(info)
        identity.modifiedSeconds = 1_700_000_000
        identity.modifiedNanoseconds = 123_456_789
        let mark = FinishedMark(request: Self.request, identity: identity, changedNoLaterThan: 1_700_000_000_123_456_789)
        #expect(FinishedMark(decoding: mark.encoded) == mark)
    }

    @Test func aFileChangedInPlaceWithItsTimePutBackIsNotProven() throws {
        let directory = try TemporaryDirectory()
        // GIVEN a marked file rewritten in place (same size), its modification time put back
        let rewritten = try Self.markedFile(directory, "rewritten")
        let chmodded = try Self.markedFile(directory, "chmodded")
        // (later than the allowance the mark's bound leaves for setting it)
        Thread.sleep(forTimeInterval: 0.02)
        var before = stat()
        #expect(stat(rewritten, &before) == 0)
        let fd = open(rewritten, O_WRONLY)
        #expect(pwrite(fd, "other", 5, 10) == 5)
        close(fd)
        var times = [before.st_atim, before.st_mtim]
        #expect(utimensat(AT_FDCWD, rewritten, &times, 0) == 0)
        // AND a marked file whose mode changed
        #expect(chmod(chmodded, 0o600) == 0)
        // THEN neither is proven: each one's change time passed the mark's bound
        #expect(FileIdentity.of(rewritten)?.modifiedNanoseconds == Int64(before.st_mtim.tv_nsec))
        #expect(FinishedMark.provenFinished(at: rewritten, request: Self.request) == nil)
        #expect(FinishedMark.provenFinished(at: chmodded, request: Self.request) == nil)
    }

    @Test func aMarkSetAgainOverAFileWrittenSinceRemovesTheMark() throws {
        // GIVEN a marked file another program wrote into before it was marked again
        let directory = try TemporaryDirectory()
        let path = directory.file("f")
        try TestData.writeFile(at: path, size: 100)
        let fd = open(path, O_RDWR)
        defer { close(fd) }
        let first = try #require(FinishedMark.mark(fd, request: Self.request))
        Thread.sleep(forTimeInterval: 0.02)
        #expect(pwrite(fd, "ZZZZ", 4, 0) == 4)
        // WHEN it is marked again expecting the first mark's identity
        // THEN it is not, and it carries no mark at all
        #expect(FinishedMark.mark(fd, request: Self.request, expecting: first) == nil)
        #expect(FinishedMark.provenFinished(at: path, request: Self.request) == nil)
        #expect(FinishedMark.finishedRequest(at: path) == nil)
    }

    @Test func aMarkSetAgainAfterARenameProvesTheRenamedFile() throws {
        // GIVEN a marked file renamed (as a finished partial is), then marked again
        let directory = try TemporaryDirectory()
        let partial = try Self.markedFile(directory, "f.haul-partial")
        let final = directory.file("f")
        Thread.sleep(forTimeInterval: 0.05)
        #expect(rename(partial, final) == 0)
        #expect(FinishedMark.provenFinished(at: final, request: Self.request) == nil)
        let fd = open(final, O_RDONLY)
        defer { close(fd) }
        #expect(FinishedMark.mark(fd, request: Self.request) != nil)
        // THEN it is proven under its final name
        #expect(FinishedMark.provenFinished(at: final, request: Self.request) != nil)
    }
}
