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
        // GIVEN a connection at 8 MiB/s whose responses start 0.1 s after each request
        var pieces = PieceSize()
        pieces.observe(moved: 4 * mib, seconds: 0.5, waited: 0.1)
        // THEN a piece lasts 2 s (16 MiB): the round trip between pieces is 5% of its time
        #expect(pieces.bytes == 16 * mib)
        // AND a near one (1 ms) stays at half a second
        var near = PieceSize()
        near.observe(moved: 4 * mib, seconds: 0.5, waited: 0.001)
        #expect(near.bytes == 4 * mib)
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
