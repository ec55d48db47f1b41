import Foundation
import HaulCore
import HaulStore
import HaulTestSupport
import Testing

@testable import Haul

/// A move cut short by a crash leaves its intent in the store and a file with two names; the next
/// move or removal of the download leaves one name per file first, the one the store names, and
/// never removes a file of another identity.
@Suite("A move cut short, finished by the next call")
struct DownloadQueueMoveIntentTests {
    /// A finished download of 50,000 bytes at `path`, in a queue of its own.
    static func finished(at path: String, _ state: TemporaryDirectory, _ server: FaultServer, seed: UInt64) async throws
        -> (DownloadQueue, Int64, [UInt8])
    {
        let body = TestData.bytes(count: 50_000, seed: seed)
        server.setResource("/a", body: body)
        let queue = try DownloadQueue(stateDirectory: state.path)
        let id = try queue.add(DownloadRequest(url: try #require(URL(string: server.url("/a"))), destination: .file(path)))
        _ = await queue.run()
        #expect(try queue.storedItem(id).state == .completed)
        return (queue, id, body)
    }

    /// The intent a move of the file `old` to `new` records (each place's lock in its own directory).
    static func intent(from old: String, to new: String, marked: FileIdentity?, relocated: Bool = false) -> MoveIntent {
        MoveIntent(
            names: [MoveIntent.Name(old: old, new: new, marked: marked)],
            locks: [old, new].map { MoveIntent.Lock(path: AbsolutePath.directory(of: $0) + "/.haul-lock", key: $0 + ".haul-partial") },
            relocated: relocated)
    }

    static func names(in directory: TemporaryDirectory) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { !$0.hasPrefix(".haul-lock") }.sorted()
    }

    @Test func aMoveAskedAfterACrashBeforeTheStoreNamedTheNewPlaceLeavesOneNameAndTheProof() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let state = try TemporaryDirectory()
        let (queue, id, body) = try await Self.finished(at: directory.file("a.bin"), state, server, seed: 901)
        // GIVEN a move of it to b.bin cut short after the link: both names, the store naming a.bin
        let identity = try #require(FileIdentity.of(directory.file("a.bin")))
        #expect(link(directory.file("a.bin"), directory.file("b.bin")) == 0)
        try QueueStore(directory: state.path).recordMoveIntent(id, Self.intent(from: directory.file("a.bin"), to: directory.file("b.bin"), marked: identity))
        // WHEN it is moved to c.bin
        let moved = try queue.move(id, to: .file(directory.file("c.bin")))
        // THEN c.bin is its one name, bit-exact, the store names it, and no intent is left
        #expect(Self.names(in: directory) == ["c.bin"])
        #expect(FileManager.default.contents(atPath: directory.file("c.bin")).map { [UInt8]($0) } == body)
        #expect(moved.finishedMarkKept)
        let item = try queue.storedItem(id)
        #expect(item.finalPath == directory.file("c.bin") && item.moveIntent == nil)
        // AND it is still provably its own: removed with its files, it is deleted
        let removal = try queue.removeWithFiles(id, inside: { _ in true })
        #expect(removal.deleted.contains { $0.role == .file && $0.path == directory.file("c.bin") }, "\(removal)")
        #expect(Self.names(in: directory).isEmpty)
    }

    @Test func aRemovalAfterACrashOnceTheStoreNamedTheNewPlaceDeletesBothNames() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let state = try TemporaryDirectory()
        let (queue, id, _) = try await Self.finished(at: directory.file("a.bin"), state, server, seed: 902)
        // GIVEN a move of it to b.bin cut short after the store named b.bin, before a.bin went
        let identity = try #require(FileIdentity.of(directory.file("a.bin")))
        #expect(link(directory.file("a.bin"), directory.file("b.bin")) == 0)
        let intent = Self.intent(from: directory.file("a.bin"), to: directory.file("b.bin"), marked: identity, relocated: true)
        try QueueStore(directory: state.path).relocate(
            id, kind: .file, destination: directory.file("b.bin"), finalPath: directory.file("b.bin"), leaving: intent)
        // WHEN it is removed with its files
        let removal = try queue.removeWithFiles(id, inside: { _ in true })
        // THEN the file at the name the store names is deleted, and the old name is gone too
        #expect(removal.deleted.contains { $0.role == .file && $0.path == directory.file("b.bin") }, "\(removal)")
        #expect(removal.kept.isEmpty, "\(removal)")
        #expect(Self.names(in: directory).isEmpty, "\(Self.names(in: directory))")
    }

    @Test func aFileOfAnotherIdentityUnderTheNewNameIsNeverRemoved() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let state = try TemporaryDirectory()
        let (queue, id, body) = try await Self.finished(at: directory.file("a.bin"), state, server, seed: 903)
        // GIVEN a move of it to b.bin cut short before its link, and someone's own file at b.bin
        let theirs = TestData.bytes(count: 1_000, seed: 904)
        try Data(theirs).write(to: URL(fileURLWithPath: directory.file("b.bin")))
        try QueueStore(directory: state.path).recordMoveIntent(
            id, Self.intent(from: directory.file("a.bin"), to: directory.file("b.bin"), marked: FileIdentity.of(directory.file("a.bin"))))
        // WHEN it is moved elsewhere
        _ = try queue.move(id, to: .file(directory.file("c.bin")))
        // THEN their file is untouched, and the download's file is at c.bin alone
        #expect(FileManager.default.contents(atPath: directory.file("b.bin")).map { [UInt8]($0) } == theirs)
        #expect(FileManager.default.contents(atPath: directory.file("c.bin")).map { [UInt8]($0) } == body)
        #expect(Self.names(in: directory) == ["b.bin", "c.bin"])
        #expect(try queue.storedItem(id).moveIntent == nil)
    }
}

/// A move cut short whose old or new directory is gone since (the user cleaned up after the crash):
/// no process can hold a lock in a directory that is not there, so the next call settles the
/// move rather than failing on that lock file for good.
@Suite("A move cut short, one of its directories gone since")
struct DownloadQueueMoveIntentGoneDirectoryTests {
    @Test func aRemovalAfterACrashWhoseOldDirectoryWasDeletedSinceStillRemovesTheDownload() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let root = try TemporaryDirectory()
        let state = try TemporaryDirectory()
        let old = root.file("old")
        let new = root.file("new")
        #expect(mkdir(old, 0o755) == 0 && mkdir(new, 0o755) == 0)
        let (queue, id, _) = try await DownloadQueueMoveIntentTests.finished(at: old + "/a.bin", state, server, seed: 905)
        // GIVEN a move of it to new/a.bin cut short after the store named the new place, before
        // old/a.bin went; then the user deleted the old directory
        let identity = try #require(FileIdentity.of(old + "/a.bin"))
        #expect(link(old + "/a.bin", new + "/a.bin") == 0)
        let intent = DownloadQueueMoveIntentTests.intent(from: old + "/a.bin", to: new + "/a.bin", marked: identity, relocated: true)
        try QueueStore(directory: state.path).relocate(id, kind: .file, destination: new + "/a.bin", finalPath: new + "/a.bin", leaving: intent)
        try FileManager.default.removeItem(atPath: old)
        // WHEN it is removed with its files
        let removal = try queue.removeWithFiles(id, inside: { _ in true })
        // THEN the file the store names is deleted, and the download is gone
        #expect(removal.deleted.contains { $0.role == .file && $0.path == new + "/a.bin" }, "\(removal)")
        #expect(!FileManager.default.fileExists(atPath: new + "/a.bin"))
        #expect(throws: (any Error).self) { try queue.storedItem(id) }
    }
}

/// A move whose new name is the old one spelled through a symlinked directory: the link finds the
/// file there already, and taking back the new names given must never remove the file's one name.
@Suite("A move to the same file by another spelling")
struct DownloadQueueMoveSameFileTests {
    @Test func aMoveToTheSameFileThroughASymlinkedDirectoryIsRefusedAndTheFileStays() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let root = try TemporaryDirectory()
        let state = try TemporaryDirectory()
        let real = root.file("real")
        #expect(mkdir(real, 0o755) == 0)
        #expect(symlink(real, root.file("link")) == 0)
        let (queue, id, body) = try await DownloadQueueMoveIntentTests.finished(at: real + "/a.bin", state, server, seed: 906)
        // GIVEN a complete download at real/a.bin, and link -> real
        // WHEN it is moved to link/a.bin (the same directory entry by another spelling)
        let outcome = Result { () throws(DownloadError) in try queue.move(id, to: .file(root.file("link") + "/a.bin")) }
        #expect(throws: DownloadError.self) { try outcome.get() }
        // THEN it is refused, and its file is still there, bit-exact
        #expect(FileManager.default.contents(atPath: real + "/a.bin").map { [UInt8]($0) } == body)
    }
}

extension DownloadQueueMoveIntentGoneDirectoryTests {
    @Test func aMoveAfterACrashWhoseNewDirectoryWasDeletedSinceMovesTheFileFromWhereTheStoreNamesIt() async throws {
        let server = try FaultServer()
        defer { server.stop() }
        let root = try TemporaryDirectory()
        let state = try TemporaryDirectory()
        let old = root.file("old")
        let new = root.file("new")
        #expect(mkdir(old, 0o755) == 0 && mkdir(new, 0o755) == 0)
        let (queue, id, body) = try await DownloadQueueMoveIntentTests.finished(at: old + "/a.bin", state, server, seed: 907)
        // GIVEN a move of it to new/a.bin cut short before the store named the new place; then the
        // user deleted the new directory (and the name in it)
        let identity = try #require(FileIdentity.of(old + "/a.bin"))
        #expect(link(old + "/a.bin", new + "/a.bin") == 0)
        let intent = DownloadQueueMoveIntentTests.intent(from: old + "/a.bin", to: new + "/a.bin", marked: identity)
        try QueueStore(directory: state.path).recordMoveIntent(id, intent)
        try FileManager.default.removeItem(atPath: new)
        // WHEN it is moved to old/c.bin
        let moved = try queue.move(id, to: .file(old + "/c.bin"))
        // THEN c.bin is its one name, bit-exact, still proven, and no intent is left
        #expect(FileManager.default.contents(atPath: old + "/c.bin").map { [UInt8]($0) } == body)
        #expect(!FileManager.default.fileExists(atPath: old + "/a.bin"))
        #expect(moved.finishedMarkKept)
        #expect(try queue.storedItem(id).moveIntent == nil)
    }
}
