import Foundation
import HaulStore
import HaulTestSupport
import Testing

/// The one overlap check: bytes a server sent against the partial's at the same offset.
@Suite("OverlapCheck")
struct OverlapCheckTests {
    @Test func sameBytesMatchAndTheFirstDifferenceIsNamedByItsOffset() throws {
        let directory = try TemporaryDirectory()
        let file = try PartialFile(path: directory.file("p"), createNew: true)
        let bytes = TestData.bytes(count: 10_000, seed: 9)
        try bytes.withUnsafeBytes { try file.append($0) }

        let same = Array(bytes[4000..<6000])
        #expect(try same.withUnsafeBytes { try file.compare($0, at: 4000) } == .matches)
        var changed = same
        changed[1234] ^= 0xFF
        #expect(try changed.withUnsafeBytes { try file.compare($0, at: 4000) } == .differs(at: 5234))
        // Past the end of the file: it ends before the bytes do.
        #expect(try same.withUnsafeBytes { try file.compare($0, at: 9000) } == .fileEnds)
        #expect(try [UInt8]().withUnsafeBytes { try file.compare($0, at: 0) } == .matches)
    }
}
