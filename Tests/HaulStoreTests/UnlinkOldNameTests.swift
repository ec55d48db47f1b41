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
}
