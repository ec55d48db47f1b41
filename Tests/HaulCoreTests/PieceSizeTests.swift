import Testing

@testable import HaulCore

@Suite("PieceSize: a segment connection's requests follow its speed")
struct PieceSizeTests {
    let mib: Int64 = 1 << 20

    @Test func theFirstPieceIsAskedBeforeAnySpeedIsKnown() {
        #expect(PieceSize().bytes == PieceSize.first)
    }

    @Test func aPieceAimsAtHalfASecondOfTheConnectionsSpeed() {
        // GIVEN a connection that moved 4 MiB in 0.5 s (8 MiB/s) THEN the next piece is 4 MiB
        var pieces = PieceSize()
        pieces.observe(moved: 4 * mib, seconds: 0.5)
        #expect(pieces.bytes == 4 * mib)
        // WHEN it moved 12 MiB in 0.5 s THEN 12 MiB
        pieces.observe(moved: 12 * mib, seconds: 0.5)
        #expect(pieces.bytes == 12 * mib)
    }

    @Test func aFarServerGetsPiecesTwentyTimesItsRoundTrip() {
        // GIVEN a connection whose response started 0.125 s after the request, then moved 1 MiB
        // in 0.25 s (4 MiB/s)
        var pieces = PieceSize()
        pieces.observe(moved: 1 * mib, seconds: 0.375, waited: 0.125)
        // THEN a piece lasts 2.5 s at that speed (10 MiB): the round trip between pieces is 5% of its time
        #expect(pieces.bytes == 10 * mib)
        // AND a near one (8 ms) stays at half a second
        var near = PieceSize()
        near.observe(moved: 4 * mib, seconds: 0.5078125, waited: 0.0078125)
        #expect(near.bytes == 4 * mib)
    }

    @Test func theShortestWaitIsTheRoundTrip() {
        // GIVEN a first request that waited 0.5 s (the connection's setup with it), then one that
        // waited 0.0625 s, both moving 8 MiB/s once started
        var pieces = PieceSize()
        pieces.observe(moved: 4 * mib, seconds: 1.0, waited: 0.5)
        pieces.observe(moved: 4 * mib, seconds: 0.5625, waited: 0.0625)
        // THEN the next is sized by 0.0625 s (a piece of 1.25 s, 10 MiB), not by the first's wait
        #expect(pieces.bytes == 10 * mib)
    }

    @Test func nearTheEndAPieceIsAFairShareOfWhatIsLeft() {
        // GIVEN a far connection: 4 MiB/s once started, 0.125 s for each head (pieces of 10 MiB)
        var pieces = PieceSize()
        pieces.observe(moved: 1 * mib, seconds: 0.375, waited: 0.125)
        #expect(pieces.bytes == 10 * mib)
        #expect(pieces.tailBytes == 2 * mib)
        // Plenty left: the piece is the speed's
        #expect(pieces.next(unrequested: 400 * mib, connections: 8) == 10 * mib)
        // 40 MiB left for 8 connections: 5 MiB each
        #expect(pieces.next(unrequested: 40 * mib, connections: 8) == 5 * mib)
        // Almost nothing left: half a second of the connection's speed
        #expect(pieces.next(unrequested: 3 * mib, connections: 8) == 2 * mib)
    }

    @Test func aNearConnectionsPiecesDoNotShrinkNearTheEnd() {
        // GIVEN a connection at 64 MiB/s on a near server (pieces of 16 MiB, half a second's worth capped by the growth)
        var pieces = PieceSize()
        pieces.observe(moved: 32 * mib, seconds: 0.5)
        #expect(pieces.bytes == 16 * mib)
        // THEN its piece stays 16 MiB however little is left: it is half a second already
        #expect(pieces.next(unrequested: 20 * mib, connections: 8) == 16 * mib)
    }

    @Test func aPieceGrowsAtMostFourfoldAndNeverPastTheMaximum() {
        var pieces = PieceSize()
        pieces.observe(moved: 4 * mib, seconds: 0.001)
        #expect(pieces.bytes == 4 * PieceSize.first)
        for _ in 0..<4 { pieces.observe(moved: pieces.bytes, seconds: 0.001) }
        #expect(pieces.bytes == PieceSize.maximum)
    }

    @Test func aSlowConnectionAsksForTheMinimum() {
        var pieces = PieceSize()
        pieces.observe(moved: 64 << 10, seconds: 2)
        #expect(pieces.bytes == PieceSize.minimum)
    }

    @Test func aPieceThatMovedNothingLeavesTheSizeAsItWas() {
        var pieces = PieceSize()
        pieces.observe(moved: 16 * mib, seconds: 1)
        let before = pieces.bytes
        pieces.observe(moved: 0, seconds: 3)
        #expect(pieces.bytes == before)
    }
}
