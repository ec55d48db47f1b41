import Testing

@testable import HaulCore

@Suite("SegmentTable: splitting and work stealing")
struct SegmentTableTests {
    let mib: Int64 = 1 << 20

    @Test func splitsIntoEqualPartsAndKeepsTheFirst() {
        var table = SegmentTable()
        let mainEnd = table.split(from: 0, to: 80 * mib, count: 4)
        #expect(mainEnd == 20 * mib)
        #expect(table.segments.map(\.begin) == [20 * mib, 40 * mib, 60 * mib])
        #expect(table.segments.last?.end == 80 * mib)
    }

    @Test func smallRangesAreNotSplit() {
        var table = SegmentTable()
        #expect(table.split(from: 0, to: 3 * mib, count: 4) == 3 * mib)
        #expect(table.segments.isEmpty)
    }

    @Test func freeSegmentsAreClaimedBeforeStealing() {
        var table = SegmentTable()
        _ = table.split(from: 0, to: 40 * mib, count: 2)
        let first = table.claim(mainNext: 0, mainEnd: 20 * mib)
        #expect(first?.index == 0)
        #expect(first?.newMainEnd == nil)
    }

    @Test func aFreeConnectionStealsHalfOfTheLargestRemainder() {
        // GIVEN one helper segment half done and the main connection barely started
        var table = SegmentTable()
        _ = table.split(from: 0, to: 40 * mib, count: 2)
        _ = table.claim(mainNext: 0, mainEnd: 20 * mib)
        table.advance(0, by: 10 * mib)
        // WHEN another connection asks for work THEN it takes the second half of the main's range
        let stolen = table.claim(mainNext: 2 * mib, mainEnd: 20 * mib)
        #expect(stolen?.newMainEnd == 11 * mib)
        #expect(table.segments[stolen?.index ?? 0] == Segment(begin: 11 * mib, end: 20 * mib))
        // WHEN the main connection is nearly done THEN the helper's remainder is split instead
        let again = table.claim(mainNext: 10 * mib, mainEnd: 11 * mib)
        #expect(again?.newMainEnd == nil)
        #expect(table.segments[0].end == 35 * mib)
        #expect(table.segments[again?.index ?? 0] == Segment(begin: 35 * mib, end: 40 * mib))
    }

    @Test func nothingLeftToStealBelowTwiceTheMinimum() {
        var table = SegmentTable(segments: [Segment(begin: 0, next: 0, end: 3 * mib)])
        _ = table.claim(mainNext: 0, mainEnd: 0)
        #expect(table.claim(mainNext: 0, mainEnd: 3 * mib) == nil)
    }

    @Test func advanceNeverPassesTheEnd() {
        var table = SegmentTable(segments: [Segment(begin: 0, end: 100)])
        #expect(table.advance(0, by: 60) == 60)
        #expect(table.advance(0, by: 60) == 40)
        #expect(table.segments[0].isDone)
        #expect(table.isComplete)
    }

    @Test func contiguousEndFollowsFinishedSegments() {
        let table = SegmentTable(segments: [Segment(begin: 100, next: 200, end: 200), Segment(begin: 200, next: 250, end: 300)])
        #expect(table.contiguousEnd(from: 100) == 250)
        #expect(table.contiguousEnd(from: 50) == 50)
        #expect(table.bytesDone == 150)
    }
}
