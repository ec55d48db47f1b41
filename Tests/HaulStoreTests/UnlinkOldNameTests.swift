import Foundation
import HaulTestSupport
import Testing

@testable import HaulStore

/// A move's old name removed in its directory held open: a parent swapped for a symlink out of the
/// root after the directory was reached never leads the removal to a file of that name elsewhere.
@Suite("A move's old name, removed in its directory held open")
struct UnlinkOldNameTests {
    @Test func anOldNameWhoseParentWasSwappedForASymlinkIsRemovedInThePinnedDirectoryAndTheFileOutsideStays() throws {
        let root = try TemporaryDirectory()
        let outside = try TemporaryDirectory()
        let sub = root.file("sub")
        #expect(mkdir(sub, 0o755) == 0)
        try Data("ours".utf8).write(to: URL(fileURLWithPath: sub + "/a.bin"))
        #expect(link(sub + "/a.bin", root.file("b.bin")) == 0)
        try Data("theirs".utf8).write(to: URL(fileURLWithPath: outside.file("a.bin")))
        // GIVEN sub/a.bin, linked at b.bin, and sub held open; then sub swapped for a symlink out
        let pinned = try TaskFiles.pinnedDirectory(sub, under: root.path, creating: false)
        #expect(rename(sub, root.file("sub.real")) == 0 && symlink(outside.path, sub) == 0)
        // WHEN the old name sub/a.bin is removed in it
        TaskFiles.unlinkOldName(sub + "/a.bin", linkedAt: root.file("b.bin"), in: pinned)
        // THEN the name in the directory held open is gone, b.bin is the file's one name, and the
        // file outside is untouched
        #expect(!FileManager.default.fileExists(atPath: root.file("sub.real") + "/a.bin"))
        #expect(FileManager.default.contents(atPath: root.file("b.bin")) == Data("ours".utf8))
        #expect(FileManager.default.contents(atPath: outside.file("a.bin")) == Data("theirs".utf8))
    }

    @Test(.timeLimit(.minutes(1)))
    func oldNamesRemovedWithNoDirectoryHeldOpenNeverFollowAParentSwappedBetweenTheCheckAndTheRemoval() throws {
        let root = try TemporaryDirectory()
        let outside = try TemporaryDirectory()
        let sub = root.file("sub")
        #expect(mkdir(sub, 0o755) == 0)
        try Data("ours".utf8).write(to: URL(fileURLWithPath: root.file("new.bin")))
        let count = 4000
        for index in 0..<count {
            #expect(link(root.file("new.bin"), sub + "/old-\(index)") == 0)
            try Data("theirs \(index)".utf8).write(to: URL(fileURLWithPath: outside.file("old-\(index)")))
        }
        // GIVEN 4,000 old names of one file in sub, files of the same names outside, and a hostile
        // process swapping sub for a symlink to outside over and over
        let flipper = SymlinkFlipper(directory: root.path, outside: outside.path)
        // WHEN each old name is removed with no directory held open (a crash's recovery by
        // whoever opens the download next, which has no root to reach it from)
        for index in 0..<count { TaskFiles.unlinkOldName(sub + "/old-\(index)", linkedAt: root.file("new.bin")) }
        flipper.stop()
        // THEN no file outside was removed: the name is judged and removed in one directory held
        // open, never by a path a swap could send elsewhere between the two
        let lost = (0..<count).filter { !FileManager.default.fileExists(atPath: outside.file("old-\($0)")) }
        #expect(lost.isEmpty, "\(lost.count) files outside removed, e.g. \(lost.prefix(5))")
        #expect(FileManager.default.contents(atPath: root.file("new.bin")) == Data("ours".utf8))
    }

    @Test(.timeLimit(.minutes(1)))
    func filesDeletedByIdentityWithNoRootNeverFollowAParentSwappedBetweenTheCheckAndTheRemoval() throws {
        let root = try TemporaryDirectory()
        let outside = try TemporaryDirectory()
        let sub = root.file("sub")
        #expect(mkdir(sub, 0o755) == 0)
        try Data("ours".utf8).write(to: URL(fileURLWithPath: root.file("own.bin")))
        let identity = try #require(FoundFile.at(root.file("own.bin")).identity)
        let count = 4000
        for index in 0..<count {
            #expect(link(root.file("own.bin"), sub + "/f-\(index)") == 0)
            try Data("theirs \(index)".utf8).write(to: URL(fileURLWithPath: outside.file("f-\(index)")))
        }
        // GIVEN 4,000 names of a download's own file in sub, files of the same names outside, and a
        // hostile process swapping sub for a symlink to outside over and over
        let flipper = SymlinkFlipper(directory: root.path, outside: outside.path)
        // WHEN each is deleted by its identity with no root to reach it from (a removal with files
        // outside haul serve)
        for index in 0..<count { try? TaskFiles.delete(sub + "/f-\(index)", ifStill: identity, within: nil) }
        flipper.stop()
        // THEN no file outside was removed
        let lost = (0..<count).filter { !FileManager.default.fileExists(atPath: outside.file("f-\($0)")) }
        #expect(lost.isEmpty, "\(lost.count) files outside removed, e.g. \(lost.prefix(5))")
    }
}
