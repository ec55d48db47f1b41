import HaulCore
import Testing

@Suite("SpaceCheck: do the remaining bytes fit in the free space")
struct SpaceCheckTests {
    @Test func unknownLengthCannotBeJudged() {
        // GIVEN no Content-Length WHEN judging THEN unknown, whatever the free space
        #expect(SpaceCheck.verdict(bytesStillNeeded: nil, available: 0, margin: 0) == .unknown)
        #expect(SpaceCheck.verdict(bytesStillNeeded: nil, available: 1 << 40, margin: 1 << 20) == .unknown)
    }

    @Test func roomToSpareFits() {
        // GIVEN 1 MiB still to write on a disk with 2 MiB free and a 64 KiB margin THEN it fits
        #expect(SpaceCheck.verdict(bytesStillNeeded: 1 << 20, available: 2 << 20, margin: 64 << 10) == .fits)
    }

    @Test func tooLittleSpaceReportsNeededIncludingTheMargin() {
        // GIVEN 3 MiB still to write on a disk with 2 MiB free and a 1 MiB margin
        let verdict = SpaceCheck.verdict(bytesStillNeeded: 3 << 20, available: 2 << 20, margin: 1 << 20)
        // THEN it does not fit, and "needed" counts the margin too
        #expect(verdict == .tooSmall(needed: 4 << 20, available: 2 << 20))
    }

    @Test func zeroMarginStillRefusesWhatCannotFit() {
        // GIVEN a zero margin WHEN the file alone is larger than the free space THEN it is refused
        #expect(
            SpaceCheck.verdict(bytesStillNeeded: 3 << 20, available: 2 << 20, margin: 0)
                == .tooSmall(needed: 3 << 20, available: 2 << 20))
    }

    @Test func exactFitIsAFitOneMoreByteIsNot() {
        // GIVEN needed + margin equal to the free space THEN it fits; one byte more THEN it does not
        #expect(SpaceCheck.verdict(bytesStillNeeded: 900, available: 1000, margin: 100) == .fits)
        #expect(
            SpaceCheck.verdict(bytesStillNeeded: 901, available: 1000, margin: 100)
                == .tooSmall(needed: 1001, available: 1000))
    }

    @Test func marginAloneCanRefuse() {
        // GIVEN nothing left to write but a margin larger than the free space THEN it is refused
        #expect(
            SpaceCheck.verdict(bytesStillNeeded: 0, available: 10, margin: 11)
                == .tooSmall(needed: 11, available: 10))
        #expect(SpaceCheck.verdict(bytesStillNeeded: 0, available: 0, margin: 0) == .fits)
    }

    @Test func negativeInputsCountAsZero() {
        // GIVEN a partial longer than announced (negative remainder) and a negative margin THEN nothing is needed
        #expect(SpaceCheck.verdict(bytesStillNeeded: -5, available: 0, margin: -7) == .fits)
    }

    @Test func hugeValuesSaturateInsteadOfOverflowing() {
        // GIVEN a sum past Int64.max WHEN judging THEN no trap, and the verdict says it does not fit
        let verdict = SpaceCheck.verdict(bytesStillNeeded: .max, available: 1 << 40, margin: 1)
        #expect(verdict == .tooSmall(needed: .max, available: 1 << 40))
    }

    @Test func theDefaultMarginScalesWithTheDisk() {
        // GIVEN disks of 2 MiB, 1 GiB and 1 TiB, and one of unknown size
        // THEN the default margin is 1% of each, at most 16 MiB, and 16 MiB when unknown
        #expect(SpaceCheck.defaultMargin(fileSystemSize: 2 << 20) == (2 << 20) / 100)
        #expect(SpaceCheck.defaultMargin(fileSystemSize: 1 << 30) == (1 << 30) / 100)
        #expect(SpaceCheck.defaultMargin(fileSystemSize: 1 << 40) == 16 << 20)
        #expect(SpaceCheck.defaultMargin(fileSystemSize: nil) == 16 << 20)
        #expect(SpaceCheck.defaultMargin(fileSystemSize: 0) == 16 << 20)
    }

    @Test func theMarginIsHintedOnlyWhereLoweringItHelps() {
        // GIVEN 3 MiB to write and 2 MiB free THEN no margin makes it fit
        #expect(!SpaceCheck.marginIsTheObstacle(bytesStillNeeded: 3 << 20, available: 2 << 20))
        // GIVEN 1 MiB to write and 2 MiB free THEN only the margin stands in the way
        #expect(SpaceCheck.marginIsTheObstacle(bytesStillNeeded: 1 << 20, available: 2 << 20))
        // GIVEN an unknown length THEN the margin is what stopped it
        #expect(SpaceCheck.marginIsTheObstacle(bytesStillNeeded: nil, available: 0))
    }
}
