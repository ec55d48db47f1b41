import Testing

@testable import HaulStore

@Suite("SecretsToForget: when a long run truncates the write-ahead log")
struct SecretsToForgetTests {
    @Test("GIVEN nothing removed WHEN asked THEN no truncation is due, however long since the last")
    func nothingPendingIsNeverDue() {
        var secrets = SecretsToForget()
        let start = ContinuousClock.now

        let atOnce = secrets.takeIfDue(now: start)
        let later = secrets.takeIfDue(now: start + .seconds(60))

        #expect(!atOnce && !later)
    }

    @Test("GIVEN secrets removed WHEN asked THEN a truncation is due at once, then not again within a second, and again after it")
    func atMostOncePerInterval() {
        var secrets = SecretsToForget()
        let start = ContinuousClock.now
        secrets.pending = true

        let first = secrets.takeIfDue(now: start)
        let pendingAfterFirst = secrets.pending
        secrets.pending = true
        let tooSoon = secrets.takeIfDue(now: start + .milliseconds(400))
        let pendingWhileTooSoon = secrets.pending
        let aSecondLater = secrets.takeIfDue(now: start + .milliseconds(1_000))

        #expect(first && !pendingAfterFirst)
        #expect(!tooSoon && pendingWhileTooSoon)
        #expect(aSecondLater)
    }

    @Test("GIVEN a truncation that did not complete WHEN it is reported THEN the secrets are pending again")
    func failedTruncationKeepsThemPending() {
        var secrets = SecretsToForget()
        let start = ContinuousClock.now
        secrets.pending = true
        _ = secrets.takeIfDue(now: start)

        secrets.failed(true)

        let retried = secrets.takeIfDue(now: start + .seconds(1))
        #expect(retried)
    }
}
