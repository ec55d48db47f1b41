import Testing

@testable import HaulStore

@Suite("RecoveryThrottle: how often a claim looks for the items of dead owners")
struct RecoveryThrottleTests {
    @Test("GIVEN a store's first claim WHEN asked THEN a recovery is due at once")
    func theFirstClaimRecovers() {
        var throttle = RecoveryThrottle(interval: .seconds(2))

        let due = throttle.takeIfDue(now: ContinuousClock.now)

        #expect(due)
    }

    @Test("GIVEN a recovery just made WHEN claims follow THEN none recovers within the interval, the first at its end does, and then none again")
    func atMostOncePerInterval() {
        var throttle = RecoveryThrottle(interval: .seconds(2))
        let start = ContinuousClock.now
        let first = throttle.takeIfDue(now: start)

        let soon = throttle.takeIfDue(now: start + .milliseconds(500))
        let justBefore = throttle.takeIfDue(now: start + .milliseconds(1_999))
        let atTheEnd = throttle.takeIfDue(now: start + .seconds(2))
        let rightAfter = throttle.takeIfDue(now: start + .milliseconds(2_001))

        #expect(first && !soon && !justBefore && atTheEnd && !rightAfter)
        #expect(throttle.recoveredAt == start + .seconds(2))
    }

    @Test("GIVEN claims too soon WHEN they are refused THEN they do not push the next recovery back")
    func refusedClaimsDoNotDelayTheNext() {
        var throttle = RecoveryThrottle(interval: .seconds(1))
        let start = ContinuousClock.now
        _ = throttle.takeIfDue(now: start)
        for tenth in 1...9 {
            _ = throttle.takeIfDue(now: start + .milliseconds(100 * tenth))
        }

        let atOneSecond = throttle.takeIfDue(now: start + .seconds(1))

        #expect(atOneSecond)
    }
}
