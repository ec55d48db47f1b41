import Testing

@testable import HaulCore

@Suite("TokenBucket: the rate limit's arithmetic")
struct TokenBucketTests {
    @Test func steadyTakingAtTheRateNeverWaitsLong() {
        // GIVEN 1000 bytes/s WHEN 100 bytes are taken every 0.1 s THEN no wait beyond the first chunk
        var bucket = TokenBucket(rate: 1000, burst: 100)
        #expect(bucket.take(100, now: 0) == 0.1)
        for step in 1...50 {
            #expect(bucket.take(100, now: 0.1 * Double(step) + 0.1) <= 0.0001)
        }
    }

    @Test func takingFasterAccumulatesDebtExactly() {
        // GIVEN 1000 bytes/s WHEN 5000 bytes arrive at once THEN the wait is 5 s
        var bucket = TokenBucket(rate: 1000, burst: 100)
        #expect(bucket.take(5000, now: 10) == 5)
        // AND after waiting it out, the next take owes only itself
        #expect(abs(bucket.take(1000, now: 15) - 1) < 1e-9)
    }

    @Test func idleTimeBuysAtMostOneBurst() {
        var bucket = TokenBucket(rate: 1000, burst: 200)
        _ = bucket.take(0, now: 0)
        // a long idle period fills only the burst
        #expect(bucket.take(200, now: 100) == 0)
        #expect(bucket.take(1000, now: 100) == 1)
    }

    @Test func totalOverAMinuteStaysWithinTheRate() {
        // GIVEN random chunk sizes taken as fast as the bucket allows for 60 s
        var bucket = TokenBucket(rate: 500_000)
        var now = 0.0
        var taken = 0
        var generator = SystemRandomNumberGenerator()
        while now < 60 {
            let chunk = Int.random(in: 1...262_144, using: &generator)
            now += bucket.take(chunk, now: now)
            taken += chunk
        }
        // THEN the average rate is the limit within 1%
        let rate = Double(taken) / now
        #expect(rate <= 500_000 * 1.01)
        #expect(rate >= 500_000 * 0.95)
    }

    @Test func askingTheWaitTakesNothing() {
        // GIVEN 1000 bytes/s and 2000 bytes taken at 0 (a 2 s debt)
        var bucket = TokenBucket(rate: 1000, burst: 100)
        #expect(bucket.take(2000, now: 0) == 2)
        // WHEN the wait is asked again and again THEN it shrinks with time alone
        #expect(bucket.wait(now: 0) == 2)
        #expect(abs(bucket.wait(now: 0.5) - 1.5) < 1e-9)
        #expect(abs(bucket.wait(now: 0.5) - 1.5) < 1e-9)
        // AND once the debt is paid nothing is owed, and the next take owes only itself
        #expect(bucket.wait(now: 2) == 0)
        #expect(abs(bucket.take(1000, now: 2) - 1) < 1e-9)
    }

    @Test func aFreshBucketOwesNothing() {
        #expect(TokenBucket(rate: 10).wait(now: 5) == 0)
    }
}
