import Testing

@testable import HaulCLIText

@Suite("RunTally: a batch's closing line accounts for every file")
struct RunTallyTests {
    @Test("GIVEN a run that completed, failed, stopped and cancelled some and left others in the queue THEN the line says each count, the rest as not run")
    func everyFileIsCounted() {
        let tally = RunTally(total: 12, skipped: 2, completed: 4, alreadyComplete: 1, failed: 1, paused: 1, cancelled: 1)
        #expect(tally.notRun == 3)
        #expect(
            tally.line
                == "6 of 12 downloads complete (3 already complete), 1 failed, 1 stopped (run again to resume), 1 cancelled, 3 not run (run again to continue)")
        #expect(tally.quietLine == "haul: 3 of 12 downloads were not run (run again to continue)")
    }

    @Test("GIVEN a run where every file ended one way or another THEN nothing is said as not run, and a quiet run says nothing")
    func aRunWithNothingLeftSaysNothingMore() {
        let tally = RunTally(total: 5, skipped: 0, completed: 4, alreadyComplete: 0, failed: 1, paused: 0, cancelled: 0)
        #expect(tally.notRun == 0)
        #expect(tally.line == "4 of 5 downloads complete, 1 failed")
        #expect(tally.quietLine == nil)
    }
}
