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

    @Test func aStealNeverTakesBytesAConnectionAskedFor() {
        // GIVEN a helper that asked for the first 30 MiB of its 40 MiB segment
        var table = SegmentTable(segments: [Segment(begin: 0, end: 40 * mib)])
        _ = table.claim(mainNext: 0, mainEnd: 0)
        #expect(table.request(0, upTo: 30 * mib) == 30 * mib)
        // WHEN an idle connection steals THEN it splits at the piece's end, not at the middle
        let stolen = table.claim(mainNext: 0, mainEnd: 0)
        #expect(stolen?.newMainEnd == nil)
        #expect(table.segments[0].end == 30 * mib)
        #expect(table.segments[stolen?.index ?? 0] == Segment(begin: 30 * mib, end: 40 * mib))
    }

    @Test func aPieceUpToTheEndLeavesNothingToSteal() {
        // GIVEN a helper that asked for all but 1 MiB of its segment, less than a split's minimum
        var table = SegmentTable(segments: [Segment(begin: 0, end: 40 * mib)])
        _ = table.claim(mainNext: 0, mainEnd: 0)
        _ = table.request(0, upTo: 39 * mib)
        // THEN nothing can be stolen; once its connection lets go, the segment is free again
        #expect(table.claim(mainNext: 0, mainEnd: 0) == nil)
        table.release(0)
        #expect(table.requestedEnds.isEmpty)
        #expect(table.claim(mainNext: 0, mainEnd: 0)?.index == 0)
    }

    @Test func aStealPrefersTheLargestShareItCanTake() {
        // GIVEN two helpers: a 40 MiB segment whose piece covers most of it, and a 20 MiB one
        // asked for 4 MiB at a time
        var table = SegmentTable(segments: [Segment(begin: 0, end: 40 * mib), Segment(begin: 40 * mib, end: 60 * mib)])
        _ = table.claim(mainNext: 0, mainEnd: 0)
        _ = table.claim(mainNext: 0, mainEnd: 0)
        _ = table.request(0, upTo: 36 * mib)
        _ = table.request(1, upTo: 4 * mib)
        // WHEN an idle connection steals THEN it splits the smaller segment, whose free half is larger
        let stolen = table.claim(mainNext: 0, mainEnd: 0)
        #expect(table.segments[1].end == 50 * mib)
        #expect(table.segments[stolen?.index ?? 0] == Segment(begin: 50 * mib, end: 60 * mib))
    }

    @Test func anOwnedSegmentThatAskedForNothingIsSplitInTheMiddle() {
        var table = SegmentTable(segments: [Segment(begin: 0, end: 40 * mib)])
        _ = table.claim(mainNext: 0, mainEnd: 0)
        let stolen = table.claim(mainNext: 0, mainEnd: 0)
        #expect(table.segments[0].end == 20 * mib)
        // AND the new segment starts with no piece asked for
        #expect(table.requestedEnds[stolen?.index ?? -1] == nil)
        #expect(table.unrequestedBytes == 40 * mib)
    }

    @Test func theMainRangeWinsATieAndLosesToALargerShare() {
        // GIVEN a helper segment of 20 MiB, nothing asked for
        var table = SegmentTable(segments: [Segment(begin: 20 * mib, end: 40 * mib)])
        _ = table.claim(mainNext: 0, mainEnd: 20 * mib)
        // WHEN the main range has as much left THEN the main range is split
        var tie = table
        #expect(tie.claim(mainNext: 0, mainEnd: 20 * mib)?.newMainEnd == 10 * mib)
        // WHEN the main range has less left THEN the helper's segment is split
        let split = table.claim(mainNext: 2 * mib, mainEnd: 20 * mib)
        #expect(split?.newMainEnd == nil)
        #expect(table.segments[0].end == 30 * mib)
    }

    @Test func aFailedRequestIsForgottenAndItsBytesCanBeTaken() {
        var table = SegmentTable(segments: [Segment(begin: 0, end: 40 * mib)])
        _ = table.claim(mainNext: 0, mainEnd: 0)
        _ = table.request(0, upTo: 36 * mib)
        #expect(table.unrequestedBytes == 4 * mib)
        // WHEN the request failed THEN the segment is split in the middle again
        table.forgetRequest(0)
        #expect(table.unrequestedBytes == 40 * mib)
        _ = table.claim(mainNext: 0, mainEnd: 0)
        #expect(table.segments[0].end == 20 * mib)
    }

    @Test func aPieceEndsAtTheSegmentsEnd() {
        var table = SegmentTable(segments: [Segment(begin: 0, next: 5 * mib, end: 8 * mib)])
        _ = table.claim(mainNext: 0, mainEnd: 0)
        #expect(table.request(0, upTo: 4 * mib) == 8 * mib)
        table.advance(0, by: 3 * mib)
        #expect(table.request(0, upTo: 4 * mib) == 8 * mib)
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

/// A refused connection's range goes back to the sequential connection (issue 36, item 12).
@Suite("SegmentTable: giving a refused range back")
struct SegmentGiveBackTests {
    @Test func anUntouchedRangeRightAfterTheSequentialOneGoesBackToIt() throws {
        // GIVEN a sequential connection at 1 MiB of its 0..<32 MiB, and a claim that split it
        var table = SegmentTable()
        let claimed = table.claim(mainNext: 1 << 20, mainEnd: 32 << 20)
        let claim = try #require(claimed)
        let mainEnd = try #require(claim.newMainEnd)
        // WHEN the claiming connection is refused before writing a byte
        let end = table.giveBack(claim.index, mainNext: 2 << 20, mainEnd: mainEnd)
        // THEN the sequential connection's range reaches the end again, the segment is empty and free
        #expect(end == 32 << 20)
        #expect(table.segments[claim.index].begin == table.segments[claim.index].end)
        #expect(table.isComplete)
        #expect(table.owned.isEmpty)
        let again = table.claim(mainNext: 2 << 20, mainEnd: 32 << 20)
        #expect(again?.newMainEnd != nil)
    }

    @Test func aRangeWithBytesOnDiskOrAfterTheSequentialConnectionEndedStays() throws {
        var table = SegmentTable()
        let claimed = table.claim(mainNext: 0, mainEnd: 32 << 20)
        let claim = try #require(claimed)
        let mainEnd = try #require(claim.newMainEnd)
        // the sequential connection already reached its end: nobody would fetch the range
        #expect(table.giveBack(claim.index, mainNext: mainEnd, mainEnd: mainEnd) == nil)
        // bytes of the segment are on disk
        table.advance(claim.index, by: 10)
        #expect(table.giveBack(claim.index, mainNext: 0, mainEnd: mainEnd) == nil)
        #expect(table.segments[claim.index].end == 32 << 20)
    }
}
