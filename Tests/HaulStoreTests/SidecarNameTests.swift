import Foundation
import HaulCore
import HaulTestSupport
import Testing

@testable import HaulStore

/// How the files beside a destination are named (`SidecarName`, `OutputLayout`), without a
/// download: a name that fits keeps the names every earlier version used, a long one gets a
/// shortened, unique stem that every sidecar fits under.
@Suite("SidecarName: the names of the files beside a destination")
struct SidecarNameTests {
    /// A name of `bytes` UTF-8 bytes: two-byte letters, then `tail`.
    static func name(bytes: Int, tail: String = ".bin") -> String {
        let letters = (bytes - tail.utf8.count) / 2
        let pad = (bytes - tail.utf8.count) % 2 == 1 ? "x" : ""
        return String(repeating: "é", count: letters) + pad + tail
    }

    @Test("GIVEN a name that fits WHEN its sidecars are named THEN each is the name plus the suffix, as always")
    func aNameThatFitsKeepsTheOldNames() {
        for sidecar in Sidecar.allCases {
            #expect(SidecarName.of("f.bin", sidecar, nameMax: 255) == "f.bin" + sidecar.suffix)
        }
        #expect(Sidecar.allCases.map(\.suffix) == [".haul-partial", ".haul-resume", ".haul-segments", ".haul-rejected"])
    }

    @Test("GIVEN names near the limit WHEN named THEN each sidecar stays old while it (and the record's temporary) fits, and only then is shortened")
    func eachSidecarIsShortenedOnlyWhenItWouldNotFit() {
        // The record is written through NAME.haul-resume.tmp: 239 + 12 + 4 = 255.
        #expect(SidecarName.of(Self.name(bytes: 239), .record, nameMax: 255) == Self.name(bytes: 239) + ".haul-resume")
        #expect(SidecarName.of(Self.name(bytes: 240), .record, nameMax: 255) != Self.name(bytes: 240) + ".haul-resume")
        // 242 + 13 = 255 for the partial, 241 + 14 = 255 for the segment map and the rejected copy.
        #expect(SidecarName.of(Self.name(bytes: 242), .partial, nameMax: 255) == Self.name(bytes: 242) + ".haul-partial")
        #expect(SidecarName.of(Self.name(bytes: 243), .partial, nameMax: 255) != Self.name(bytes: 243) + ".haul-partial")
        #expect(SidecarName.of(Self.name(bytes: 241), .segmentMap, nameMax: 255) == Self.name(bytes: 241) + ".haul-segments")
        #expect(SidecarName.of(Self.name(bytes: 242), .segmentMap, nameMax: 255) != Self.name(bytes: 242) + ".haul-segments")
        #expect(SidecarName.of(Self.name(bytes: 241), .rejected, nameMax: 255) == Self.name(bytes: 241) + ".haul-rejected")
        #expect(SidecarName.of(Self.name(bytes: 242), .rejected, nameMax: 255) != Self.name(bytes: 242) + ".haul-rejected")
    }

    @Test(
        "GIVEN any name up to the limit WHEN its sidecars are named THEN every one (and the record's temporary) fits",
        arguments: [(255, 200), (255, 239), (255, 240), (255, 243), (255, 250), (255, 255), (143, 100), (143, 143)])
    func everySidecarFits(nameMax: Int, bytes: Int) {
        for name in [Self.name(bytes: bytes), String(repeating: "a", count: bytes), String(repeating: "👍🏽", count: bytes / 8)] {
            for sidecar in Sidecar.allCases {
                let named = SidecarName.of(name, sidecar, nameMax: nameMax)
                let extra = sidecar == .record ? RecordFile.temporarySuffix.utf8.count : 0
                #expect(named.utf8.count + extra <= nameMax, "\(sidecar) of a \(name.utf8.count)-byte name: \(named.utf8.count) bytes")
                #expect(named.hasSuffix(sidecar.suffix))
            }
        }
    }

    @Test("GIVEN a long name WHEN shortened THEN the stem is its start cut between characters, a tilde and 32 hex digits of its SHA-256")
    func theShortenedStemIsPinned() {
        // Pinned: a change here would orphan the partials users already have under long names.
        let name = String(repeating: "é", count: 125) + ".bin"
        let stem = SidecarName.shortenedStem(of: name, nameMax: 255)
        #expect(stem == String(repeating: "é", count: 103) + "~59a6e152b55dc2045fc24d41aa0257e7")
        #expect(SidecarName.of(name, .partial, nameMax: 255) == stem + ".haul-partial")
        #expect(SidecarName.of(name, .rejected, nameMax: 255) == stem + ".haul-rejected")
        // A grapheme of several scalars is kept whole or left out, never split.
        let family = String(repeating: "👨‍👩‍👧", count: 20)
        let cut = SidecarName.shortenedStem(of: family, nameMax: 255).dropLast(33)
        #expect(cut.unicodeScalars.count % 5 == 0 && cut.allSatisfy { $0 == "👨‍👩‍👧" }, "\(cut.unicodeScalars.count)")
    }

    @Test("GIVEN two long names that differ only at their end WHEN their sidecars are named THEN they share none")
    func namesSharingTheirStartGetTheirOwnSidecars() {
        let first = Self.name(bytes: 250, tail: "-a.bin")
        let second = Self.name(bytes: 250, tail: "-b.bin")
        for sidecar in Sidecar.allCases {
            #expect(SidecarName.of(first, sidecar, nameMax: 255) != SidecarName.of(second, sidecar, nameMax: 255))
        }
    }

    @Test("GIVEN a name chosen to equal another's shortened stem WHEN named THEN it is shortened too, so the two never share a sidecar")
    func aNameShapedLikeAStemIsNeverKeptWhole() {
        let long = Self.name(bytes: 250)
        let impostor = SidecarName.shortenedStem(of: long, nameMax: 255)
        #expect(impostor.utf8.count < 240)
        for sidecar in Sidecar.allCases {
            let mine = SidecarName.of(long, sidecar, nameMax: 255)
            let theirs = SidecarName.of(impostor, sidecar, nameMax: 255)
            #expect(mine != theirs)
            #expect(theirs.hasSuffix(sidecar.suffix) && theirs != impostor + sidecar.suffix)
        }
        #expect(SidecarName.looksShortened("x~0123456789abcdef0123456789abcdef"))
        #expect(!SidecarName.looksShortened("x~0123456789ABCDEF0123456789abcdef"))
        #expect(!SidecarName.looksShortened("x~0123456789abcdef0123456789abcde"))
        #expect(!SidecarName.looksShortened("report.pdf"))
    }

    @Test("GIVEN an explicit path WHEN laid out THEN the sidecar paths are exactly the old ones for a short name")
    func theLayoutOfAShortNameIsUnchanged() throws {
        let layout = OutputLayout.file("/d/f.bin", nameMax: 255)
        #expect(layout.partialPath == "/d/f.bin.haul-partial")
        #expect(layout.recordPath == "/d/f.bin.haul-resume")
        #expect(layout.segmentMapPath == "/d/f.bin.haul-segments")
        #expect(layout.rejectedPath == "/d/f.bin.haul-rejected")
        #expect(layout.lockPath == "/d/.haul-lock")
        #expect(layout.finalNameTooLong == nil)
        // A relative path stays relative, with no "./" added.
        #expect(OutputLayout.file("f.bin", nameMax: 255).partialPath == "f.bin.haul-partial")
        // A directory download's files are keyed by its URL, as before.
        let url = try #require(URL(string: "https://example.com/a"))
        let keyed = OutputLayout.directory("/d", url: url, nameMax: 255)
        #expect(keyed.partialPath == "/d/.haul-" + OutputLayout.stableHash(url.absoluteString) + ".haul-partial")
        #expect(keyed.rejectedPath == "/d/.haul-" + OutputLayout.stableHash(url.absoluteString) + ".haul-rejected")
    }

    @Test("GIVEN an explicit path with a long name WHEN laid out THEN its sidecars are shortened beside it, and a name past the limit is flagged")
    func theLayoutOfALongName() {
        let name = Self.name(bytes: 250)
        let layout = OutputLayout.file("/d/" + name, nameMax: 255)
        #expect(layout.finalPath == "/d/" + name)
        #expect(layout.partialPath == "/d/" + SidecarName.of(name, .partial, nameMax: 255))
        #expect(layout.path(of: .segmentMap) == layout.segmentMapPath)
        #expect(layout.finalNameTooLong == nil)
        let tooLong = Self.name(bytes: 256)
        #expect(OutputLayout.file("/d/" + tooLong, nameMax: 255).finalNameTooLong == tooLong)
        #expect(OutputLayout.file("/d/" + Self.name(bytes: 150), nameMax: 143).finalNameTooLong != nil)
    }

    @Test(
        "GIVEN a directory WHEN its name limit is asked THEN the file system's (at most 255) comes back, from the nearest existing parent while it is missing"
    )
    func theNameLimitComesFromTheFileSystem() throws {
        let directory = try TemporaryDirectory(prefix: "haul-name-limit")
        let limit = OutputLayout.nameLimit(of: directory.path)
        #expect((1...255).contains(limit))
        #expect(OutputLayout.nameLimit(of: directory.file("not/yet/made")) == limit)
        #expect(OutputLayout.nameLimit(of: "") == OutputLayout.nameLimit(of: "."))
    }

    @Test("GIVEN a 255-byte name taken twice WHEN numbered THEN the new name is cut to fit, its number and extension kept")
    func aNumberedNameStaysWithinTheLimit() {
        #expect(ClaimedNames.numbered("report", ".pdf", 1) == "report (1).pdf")
        let stem = String(repeating: "é", count: 125) + "x"
        let numbered = ClaimedNames.numbered(stem, ".bin", 12)
        #expect(numbered.utf8.count <= 255 && numbered.hasSuffix("é (12).bin"), "\(numbered.utf8.count)")
        // An extension too long to keep is cut with the rest.
        let odd = ClaimedNames.numbered("a", "." + String(repeating: "z", count: 253), 1)
        #expect(odd.utf8.count <= 255 && odd.hasSuffix("z (1)"))
    }

    @Test("GIVEN text WHEN its start is taken within a byte budget THEN it is cut between characters, else between scalars")
    func prefixesAreCutOnBoundaries() {
        #expect(FileNameSanitizer.prefix(of: "éé", withinBytes: 3) == "é")
        #expect(FileNameSanitizer.prefix(of: "abc", withinBytes: 10) == "abc")
        #expect(FileNameSanitizer.prefix(of: "abc", withinBytes: 0) == "")
        // One grapheme too big for the budget: cut between its scalars instead.
        let heavy = "e" + String(repeating: "\u{301}", count: 10)
        #expect(FileNameSanitizer.prefix(of: heavy, withinBytes: 5) == "e\u{301}\u{301}")
    }
}
