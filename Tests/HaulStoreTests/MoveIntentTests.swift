import Foundation
import Testing

@testable import HaulStore

/// The rule of which name of a moved file goes after a crash, and the column's text.
@Suite("MoveIntent")
struct MoveIntentTests {
    static let intent = MoveIntent(
        names: [
            MoveIntent.Name(old: "/d/a.bin.haul-partial", new: "/d/sub/b.bin.haul-partial"),
            MoveIntent.Name(old: "/d/a.bin.haul-segments", new: "/d/sub/b.bin.haul-segments"),
        ],
        locks: [
            MoveIntent.Lock(path: "/d/.haul-lock", key: "/d/a.bin.haul-partial"), MoveIntent.Lock(path: "/d/sub/.haul-lock", key: "/d/sub/b.bin.haul-partial"),
        ])

    @Test("GIVEN a move not yet recorded as relocated WHEN it is finished THEN the new names go and the old ones stay")
    func beforeRelocateTheNewNamesGo() {
        let leftover = Self.intent.leftover
        #expect(leftover.map(\.remove) == ["/d/sub/b.bin.haul-partial", "/d/sub/b.bin.haul-segments"])
        #expect(leftover.map(\.keep) == ["/d/a.bin.haul-partial", "/d/a.bin.haul-segments"])
    }

    @Test("GIVEN a move the store recorded as relocated WHEN it is finished THEN the old names go and the new ones stay")
    func afterRelocateTheOldNamesGo() {
        var relocated = Self.intent
        relocated.relocated = true
        let leftover = relocated.leftover
        #expect(leftover.map(\.remove) == ["/d/a.bin.haul-partial", "/d/a.bin.haul-segments"])
        #expect(leftover.map(\.keep) == ["/d/sub/b.bin.haul-partial", "/d/sub/b.bin.haul-segments"])
    }

    @Test("GIVEN an intent with names in NFD and NFC WHEN it is encoded and read THEN the same text comes back, byte for byte")
    func itsTextComesBackByteForByte() throws {
        var intent = Self.intent
        intent.names[0].new = "/d/sub/e\u{301}.bin.haul-partial"
        intent.names[1].new = "/d/sub/\u{e9}.bin.haul-segments"
        intent.resumes = true
        let text = try intent.encoded()
        let read = try #require(MoveIntent.read(text))
        // The store clears an intent only while its text is unchanged: a read one encodes the same.
        #expect(Array(try read.encoded().utf8) == Array(text.utf8))
        #expect(Array(read.names[0].new.utf8) == Array(intent.names[0].new.utf8))
        #expect(read.resumes && !read.relocated)
        #expect(MoveIntent.read("{not an intent") == nil)
    }
}
