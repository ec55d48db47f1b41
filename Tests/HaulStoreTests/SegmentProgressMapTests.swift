import Foundation
import HaulCore
import HaulTestSupport
import Testing

@testable import HaulStore

/// The mapped segment progress: what a run killed after a write leaves for the next run.
@Suite("SegmentProgressMap")
struct SegmentProgressMapTests {
    @Test func progressWrittenThroughTheMapIsReadBack() throws {
        // GIVEN a map of two segments
        let directory = try TemporaryDirectory()
        let path = directory.file("f.haul-segments")
        let segments = [Segment(begin: 100, end: 200), Segment(begin: 200, end: 400)]
        let map = try SegmentProgressMap(path: path, prefix: 10, segments: segments)

        // WHEN the connections advance (no sync, no close: as if the process then died)
        map.advance(0, to: 150)
        map.advance(1, to: 260)
        map.setPrefix(42)

        // THEN a reader of the file sees exactly that progress
        let read = try #require(SegmentProgressMap.read(path: path))
        #expect(read.prefix == 42)
        #expect(read.segments == [Segment(begin: 100, next: 150, end: 200), Segment(begin: 200, next: 260, end: 400)])
    }

    @Test func aTableRewriteGrowsTheMapAndATornOneIsIgnored() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("f.haul-segments")
        let map = try SegmentProgressMap(path: path, prefix: 0, segments: [])
        // WHEN the table grows past the first capacity THEN all of it is kept
        let many = (0..<600).map { Segment(begin: Int64($0) * 10, next: Int64($0) * 10 + 5, end: Int64($0) * 10 + 10) }
        map.store(prefix: 7, segments: many)
        #expect(SegmentProgressMap.read(path: path)?.segments == many)

        // WHEN a rewrite was torn (odd generation) or the values are impossible THEN nothing is trusted
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        try handle.seek(toOffset: 8)
        try handle.write(contentsOf: withUnsafeBytes(of: Int64(3)) { Data($0) })
        try handle.close()
        #expect(SegmentProgressMap.read(path: path) == nil)
        // AND a file of another format is not read
        try Data("not a map".utf8).write(to: URL(fileURLWithPath: path))
        #expect(SegmentProgressMap.read(path: path) == nil)
    }
}
