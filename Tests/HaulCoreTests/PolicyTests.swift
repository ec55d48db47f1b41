import Foundation
import Testing

@testable import HaulCore

@Suite("RetryPolicy, ProgressMeter, Validators")
struct PolicyTests {
    @Test func backoffDoublesAndIsCapped() {
        let policy = RetryPolicy(maxRetries: 10, baseDelay: 1, maxDelay: 8)
        #expect((1...6).map { policy.delay(forRetry: $0) } == [1, 2, 4, 8, 8, 8])
    }

    @Test func retryAfterWinsWhenLongerButIsCapped() {
        let policy = RetryPolicy(maxRetries: 3, baseDelay: 1, maxDelay: 60)
        #expect(policy.delay(forRetry: 1, retryAfter: 5) == 5)
        #expect(policy.delay(forRetry: 3, retryAfter: 0) == 4)
        #expect(policy.delay(forRetry: 1, retryAfter: 86_400) == 600)
    }

    @Test func retryableStatuses() {
        #expect(RetryPolicy.isRetryable(status: 503))
        #expect(RetryPolicy.isRetryable(status: 429))
        #expect(!RetryPolicy.isRetryable(status: 404))
        #expect(!RetryPolicy.isRetryable(status: 403))
    }

    @Test func meterReportsSpeedAndTimeLeft() {
        var meter = ProgressMeter(window: 10)
        meter.record(bytes: 0, at: 0)
        meter.record(bytes: 1000, at: 1)
        meter.record(bytes: 2000, at: 2)
        #expect(meter.bytesPerSecond == 1000)
        #expect(meter.secondsLeft(remaining: 5000) == 5)
        #expect(meter.secondsLeft(remaining: nil) == nil)
    }

    @Test func meterForgetsOldSamples() {
        var meter = ProgressMeter(window: 2)
        meter.record(bytes: 0, at: 0)
        meter.record(bytes: 100, at: 1)
        meter.record(bytes: 10_100, at: 10)
        meter.record(bytes: 20_100, at: 11)
        #expect(meter.bytesPerSecond == 10_000)
    }

    @Test func validatorConflicts() {
        let v1 = Validators(etag: EntityTag(isWeak: false, opaqueTag: "\"1\""), lastModified: "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(!v1.conflicts(with: v1))
        #expect(v1.conflicts(with: Validators(etag: EntityTag(isWeak: false, opaqueTag: "\"2\""))))
        #expect(!v1.conflicts(with: .none))
        #expect(Validators(lastModified: "Sun, 06 Nov 1994 08:49:37 GMT").conflicts(with: Validators(lastModified: "Mon, 07 Nov 1994 08:49:37 GMT")))
        #expect(Validators(etag: EntityTag(isWeak: true, opaqueTag: "\"w\"")).ifRangeValue == nil)
    }
}
