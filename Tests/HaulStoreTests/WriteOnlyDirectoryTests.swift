import Foundation
import HaulTestSupport
import Testing

@testable import HaulStore

/// A name removed in a directory its user may write and search but not list (mode 0300, a drop
/// box): `unlink` needs no more, and the directory opened to remove the name in must need no
/// more either. Root reads every directory, so this thread takes an unprivileged file system
/// identity (`setfsuid`, per thread) for the removal.
@Suite("Names removed in a directory that cannot be listed", .serialized)
struct WriteOnlyDirectoryTests {
    private typealias SetFSUID = @convention(c) (UInt32) -> Int32
    private static let nobody: UInt32 = 65_534

    /// Runs `body` with the file system identity of `nobody` on this thread.
    private static func asNobody<T>(_ body: () throws -> T) throws -> T {
        let symbol = try #require(dlsym(nil, "setfsuid"))
        let setfsuid = unsafeBitCast(symbol, to: SetFSUID.self)
        let previous = setfsuid(nobody)
        defer { _ = setfsuid(UInt32(bitPattern: previous)) }
        return try body()
    }

    /// A directory `drop` (0300, owned by nobody) in a fresh directory nobody can search.
    private static func dropBox() throws -> (base: TemporaryDirectory, drop: String) {
        let base = try TemporaryDirectory()
        #expect(chmod(base.path, 0o711) == 0)
        let drop = base.file("drop")
        #expect(mkdir(drop, 0o755) == 0)
        return (base, drop)
    }

    private static func close(_ drop: String) {
        #expect(chown(drop, nobody, nobody) == 0 && chmod(drop, 0o300) == 0)
    }

    @Test(.enabled(if: getuid() == 0, "needs to take another file system identity"))
    func oldNameInADirectoryThatCannotBeListedIsRemoved() throws {
        let (base, drop) = try Self.dropBox()
        try Data("ours".utf8).write(to: URL(fileURLWithPath: drop + "/old.bin"))
        #expect(link(drop + "/old.bin", base.file("new.bin")) == 0)
        Self.close(drop)
        // GIVEN a move's old name drop/old.bin, linked at new.bin, in a directory its user may
        // write and search but not list
        try Self.asNobody {
            let fd = open(drop, O_RDONLY | O_DIRECTORY)
            #expect(fd < 0 && errno == EACCES, "the directory can be listed: the test proves nothing")
            if fd >= 0 { Glibc.close(fd) }
            // WHEN the old name is removed with no directory held open (a crash's recovery)
            TaskFiles.unlinkOldName(drop + "/old.bin", linkedAt: base.file("new.bin"))
        }
        // THEN the old name is gone (unlink needs only write and search), the new one stays
        #expect(FoundFile.at(drop + "/old.bin").identity == nil)
        #expect(FileManager.default.contents(atPath: base.file("new.bin")) == Data("ours".utf8))
    }

    @Test(.enabled(if: getuid() == 0, "needs to take another file system identity"))
    func fileDeletedByIdentityInADirectoryThatCannotBeListedIsRemoved() throws {
        let (base, drop) = try Self.dropBox()
        defer { withExtendedLifetime(base) {} }
        try Data("ours".utf8).write(to: URL(fileURLWithPath: drop + "/f.bin"))
        let identity = try #require(FoundFile.at(drop + "/f.bin").identity)
        Self.close(drop)
        // GIVEN a download's file in a directory its user may write and search but not list
        // WHEN it is deleted by its identity with no root (a removal with files outside haul serve)
        let outcome = try Self.asNobody { () -> String? in
            do throws(OutputError) {
                try TaskFiles.delete(drop + "/f.bin", ifStill: identity, within: nil)
                return nil
            } catch {
                return "\(error.text)"
            }
        }
        // THEN it is deleted, as unlink would delete it, with no error
        #expect(outcome == nil)
        #expect(FoundFile.at(drop + "/f.bin").identity == nil)
    }
}
