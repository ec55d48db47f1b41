/// What a batch did, counted, and the closing line that says so: every file asked for is in one
/// of its counts, so a run that ends without completing everything always says why.
package struct RunTally: Sendable, Equatable {
    /// Every file asked for, `skipped` included.
    package var total: Int
    /// Files an earlier run completed: not run this time.
    package var skipped: Int
    package var completed: Int
    /// Of `completed`, those found already in place.
    package var alreadyComplete: Int
    package var failed: Int
    package var paused: Int
    package var cancelled: Int

    package init(total: Int, skipped: Int, completed: Int, alreadyComplete: Int, failed: Int, paused: Int, cancelled: Int) {
        self.total = total
        self.skipped = skipped
        self.completed = completed
        self.alreadyComplete = alreadyComplete
        self.failed = failed
        self.paused = paused
        self.cancelled = cancelled
    }

    /// Files the run neither completed nor ended some other way: left in the queue (their
    /// workers stopped, or their leases were lost to another process); the next run takes them.
    package var notRun: Int {
        max(0, total - skipped - completed - failed - paused - cancelled)
    }

    /// The closing line of a normal run.
    package var line: String {
        let already = alreadyComplete + skipped
        var parts = ["\(completed + skipped) of \(total) downloads complete" + (already > 0 ? " (\(already) already complete)" : "")]
        if failed > 0 { parts.append("\(failed) failed") }
        if paused > 0 { parts.append("\(paused) stopped (run again to resume)") }
        if cancelled > 0 { parts.append("\(cancelled) cancelled") }
        if notRun > 0 { parts.append("\(notRun) not run (run again to continue)") }
        return parts.joined(separator: ", ")
    }

    /// The line a quiet run prints (it shows failures one by one, nothing else): nil unless some
    /// files were not run, which no other line would explain.
    package var quietLine: String? {
        notRun > 0 ? "haul: \(notRun) of \(total) downloads were not run (run again to continue)" : nil
    }
}
