import Foundation
import Testing

@testable import HaulCore

@Suite("RetryAfter")
struct RetryAfterTests {
    private let now = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT

    @Test(
        "GIVEN delta-seconds WHEN read THEN the delay is that many seconds",
        arguments: [("120", 120.0), ("0", 0.0), (" 5 ", 5.0), ("0007", 7.0), ("86400", 86_400.0)])
    func deltaSeconds(text: String, expected: TimeInterval) {
        #expect(RetryAfter.delay(fromHeader: text, now: now) == expected)
    }

    @Test(
        "GIVEN absurd delta-seconds WHEN read THEN the delay is capped at 24 hours",
        arguments: [
            "86401", "9223372036854775807", "9223372036854775808",
            String(repeating: "9", count: 1_000),
        ])
    func capsDeltaSeconds(text: String) {
        #expect(RetryAfter.delay(fromHeader: text, now: now) == 86_400)
    }

    @Test("GIVEN an HTTP-date in the future WHEN read THEN the delay is the time until it")
    func futureDate() {
        #expect(RetryAfter.delay(fromHeader: "Sun, 06 Nov 1994 08:51:37 GMT", now: now) == 120)
        #expect(RetryAfter.delay(fromHeader: "Sunday, 06-Nov-94 08:50:37 GMT", now: now) == 60)
    }

    @Test("GIVEN an HTTP-date in the past WHEN read THEN the delay clamps to zero")
    func pastDate() {
        #expect(RetryAfter.delay(fromHeader: "Sat, 05 Nov 1994 08:49:37 GMT", now: now) == 0)
    }

    @Test("GIVEN an HTTP-date years ahead WHEN read THEN the delay is capped at 24 hours")
    func farFutureDate() {
        #expect(RetryAfter.delay(fromHeader: "Fri, 31 Dec 9999 23:59:59 GMT", now: now) == 86_400)
    }

    @Test(
        "GIVEN malformed or hostile input WHEN read THEN the result is nil",
        arguments: [
            "", "   ", "-5", "+5", "1.5", "1e3", "120s", "soon", "0x10", "12 0",
            "Sun, 06 Nov 1994 08:49:37", "٣", String(repeating: "x", count: 10_000),
        ])
    func rejectsMalformed(text: String) {
        #expect(RetryAfter.delay(fromHeader: text, now: now) == nil)
    }
}
