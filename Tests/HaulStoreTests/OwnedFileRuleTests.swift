import Foundation
import HaulStore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The rule of what removing a download may delete, without any file: a file is the download's
/// own only when the identity recorded when Haul made it proves it.
@Suite("OwnedFileRule: what a download's removal may delete")
struct OwnedFileRuleTests {
    static func identity(device: UInt64 = 1, inode: UInt64, size: Int64 = 10, modified: Int64 = 100) -> FileIdentity {
        var info = stat()
        info.st_dev = .init(truncatingIfNeeded: device)
        info.st_ino = .init(truncatingIfNeeded: inode)
        info.st_size = .init(truncatingIfNeeded: size)
        info.st_mtim.tv_sec = .init(truncatingIfNeeded: modified)
        return FileIdentity(info)
    }

    static func reason(_ verdict: OwnedFileRule.Verdict) -> String? {
        if case .notOwned(let reason) = verdict { return reason }
        return nil
    }

    @Test("GIVEN the partial its record names, grown since WHEN judged THEN it is the download's own")
    func aGrownPartialWithTheRecordedInodeIsOwned() {
        let recorded = Self.identity(inode: 7, size: 10, modified: 100)
        let grown = Self.identity(inode: 7, size: 9_000, modified: 250)
        #expect(OwnedFileRule.partial(recorded: recorded, found: .regular(grown)) == .owned)
    }

    @Test("GIVEN another inode or device under the partial's name WHEN judged THEN it is kept, naming both identities")
    func anotherInodeOrDeviceIsKept() {
        let recorded = Self.identity(device: 1, inode: 7)
        let otherInode = OwnedFileRule.partial(recorded: recorded, found: .regular(Self.identity(device: 1, inode: 8)))
        let otherDevice = OwnedFileRule.partial(recorded: recorded, found: .regular(Self.identity(device: 2, inode: 7)))
        #expect(Self.reason(otherInode)?.contains("inode 8") == true && Self.reason(otherInode)?.contains("inode 7") == true)
        #expect(Self.reason(otherDevice)?.contains("device 2") == true)
    }

    @Test("GIVEN no record, a symlink or nothing under the partial's name WHEN judged THEN kept, kept, absent")
    func noRecordASymlinkOrNothing() {
        let found = FoundFile.regular(Self.identity(inode: 7))
        #expect(Self.reason(OwnedFileRule.partial(recorded: nil, found: found))?.contains("no record") == true)
        #expect(Self.reason(OwnedFileRule.partial(recorded: Self.identity(inode: 7), found: .notRegular)) != nil)
        #expect(OwnedFileRule.partial(recorded: Self.identity(inode: 7), found: .missing) == .absent)
    }

    @Test("GIVEN a segment map WHEN its partial is owned, kept or absent THEN it goes with it only when owned")
    func theSegmentMapFollowsItsPartial() {
        let map = FoundFile.regular(Self.identity(inode: 9))
        #expect(OwnedFileRule.companion(of: .owned, found: map) == .owned)
        #expect(Self.reason(OwnedFileRule.companion(of: .notOwned("x"), found: map)) != nil)
        #expect(Self.reason(OwnedFileRule.companion(of: .absent, found: map)) != nil)
        #expect(OwnedFileRule.companion(of: .owned, found: .missing) == .absent)
    }

    @Test("GIVEN a finished file WHEN its mark proves it, does not, or the download is never marked THEN owned, kept, kept (saying why)")
    func theFinishedFileNeedsItsMark() {
        let found = FoundFile.regular(Self.identity(inode: 3))
        #expect(OwnedFileRule.finished(found: found, provable: true, markProves: true) == .owned)
        #expect(Self.reason(OwnedFileRule.finished(found: found, provable: true, markProves: false))?.contains("not the file") == true)
        #expect(Self.reason(OwnedFileRule.finished(found: found, provable: false, markProves: false))?.contains("credentials") == true)
        #expect(Self.reason(OwnedFileRule.finished(found: .notRegular, provable: true, markProves: true)) != nil)
        #expect(OwnedFileRule.finished(found: .missing, provable: true, markProves: true) == .absent)
    }

    @Test("GIVEN a rejected partial WHEN judged THEN it is never taken as the download's own")
    func aRejectedPartialIsKept() {
        #expect(Self.reason(OwnedFileRule.unidentified(found: .regular(Self.identity(inode: 4)))) != nil)
        #expect(OwnedFileRule.unidentified(found: .missing) == .absent)
    }
}
