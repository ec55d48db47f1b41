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

    /// `count` names of one file (root/own.bin, "ours") in root/sub, files of the same names
    /// outside holding other bytes, and `race`: a hostile process swapping sub for a symlink to
    /// outside while each name is handed to a removal.
    private struct SwappedParent {
        let root: TemporaryDirectory
        let outside: TemporaryDirectory
        let own: String
        let count = 4000

        init() throws {
            root = try TemporaryDirectory()
            outside = try TemporaryDirectory()
            own = root.file("own.bin")
            #expect(mkdir(root.file("sub"), 0o755) == 0)
            try Data("ours".utf8).write(to: URL(fileURLWithPath: own))
            for index in 0..<count {
                #expect(link(own, root.file("sub/name-\(index)")) == 0)
                try Data("theirs \(index)".utf8).write(to: URL(fileURLWithPath: outside.file("name-\(index)")))
            }
        }

        /// Calls `remove` with each name's path in sub while the swapping goes on; returns the
        /// indexes of the files outside that are gone.
        func race(_ remove: (String) -> Void) -> [Int] {
            let flipper = SymlinkFlipper(directory: root.path, outside: outside.path)
            for index in 0..<count { remove(root.file("sub/name-\(index)")) }
            flipper.stop()
            return (0..<count).filter { !FileManager.default.fileExists(atPath: outside.file("name-\($0)")) }
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func oldNamesRemovedWithNoDirectoryHeldOpenNeverFollowAParentSwappedBetweenTheCheckAndTheRemoval() throws {
        // GIVEN 4,000 old names of one file in sub, files of the same names outside, and a hostile
        // process swapping sub for a symlink to outside over and over
        let scene = try SwappedParent()
        // WHEN each old name is removed with no directory held open (a crash's recovery by
        // whoever opens the download next, which has no root to reach it from)
        let lost = scene.race { TaskFiles.unlinkOldName($0, linkedAt: scene.own) }
        // THEN no file outside was removed: the name is judged and removed in one directory held
        // open, never by a path a swap could send elsewhere between the two
        #expect(lost.isEmpty, "\(lost.count) files outside removed, e.g. \(lost.prefix(5))")
        #expect(FileManager.default.contents(atPath: scene.own) == Data("ours".utf8))
    }

    @Test(.timeLimit(.minutes(1)))
    func filesDeletedByIdentityWithNoRootNeverFollowAParentSwappedBetweenTheCheckAndTheRemoval() throws {
        // GIVEN 4,000 names of a download's own file in sub, files of the same names outside, and a
        // hostile process swapping sub for a symlink to outside over and over
        let scene = try SwappedParent()
        let identity = try #require(FoundFile.at(scene.own).identity)
        // WHEN each is deleted by its identity with no root to reach it from (a removal with files
        // outside haul serve)
        let lost = scene.race { try? TaskFiles.delete($0, ifStill: identity, within: nil) }
        // THEN no file outside was removed
        #expect(lost.isEmpty, "\(lost.count) files outside removed, e.g. \(lost.prefix(5))")
    }
}
