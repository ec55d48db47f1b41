import Foundation
import Testing

@testable import HaulCore

@Suite("HTTPDate")
struct HTTPDateTests {
    /// Sun, 06 Nov 1994 08:49:37 GMT, the RFC's own example.
    private let rfcExample = Date(timeIntervalSince1970: 784_111_777)

    @Test(
        "GIVEN the RFC example in all three formats WHEN parsed THEN each is the same instant",
        arguments: [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
            "Sun Nov 06 08:49:37 1994",
            "  sun, 06 nov 1994 08:49:37 gmt  ",
            "Sunday, 06-Nov-1994 08:49:37 GMT",
        ])
    func parsesAllFormats(text: String) {
        #expect(HTTPDate.parse(text) == rfcExample)
    }

    @Test(
        "GIVEN dates around the epoch and leap days WHEN parsed THEN seconds are exact",
        arguments: [
            ("Thu, 01 Jan 1970 00:00:00 GMT", 0.0),
            ("Wed, 31 Dec 1969 23:59:59 GMT", -1.0),
            ("Tue, 29 Feb 2000 12:00:00 GMT", 951_825_600.0),
            ("Fri, 31 Dec 9999 23:59:59 GMT", 253_402_300_799.0),
            ("Mon, 01 Jan 0001 00:00:00 GMT", -62_135_596_800.0),
            ("Sat, 31 Dec 2016 23:59:60 GMT", 1_483_228_800.0),
        ])
    func exactSeconds(text: String, seconds: Double) {
        #expect(HTTPDate.parse(text)?.timeIntervalSince1970 == seconds)
    }

    @Test("GIVEN a two-digit RFC 850 year WHEN parsed THEN it lands within 50 years of now")
    func twoDigitYearWindow() throws {
        let now = try #require(HTTPDate.parse("Wed, 01 Jan 2025 00:00:00 GMT"))
        let near = try #require(HTTPDate.parse("Monday, 01-Jan-74 00:00:00 GMT", relativeTo: now))
        let far = try #require(HTTPDate.parse("Monday, 01-Jan-76 00:00:00 GMT", relativeTo: now))
        #expect(HTTPDate.format(near).hasSuffix("2074 00:00:00 GMT"))
        #expect(HTTPDate.format(far).hasSuffix("1976 00:00:00 GMT"))
    }

    @Test(
        "GIVEN malformed or hostile input WHEN parsed THEN the result is nil",
        arguments: [
            "", "   ", "garbage", "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Nov 1994 08:49:37 PST",
            "Sun, 06 Nov 1994 08:49:37 +0100", "Sun, 32 Jan 1994 08:49:37 GMT", "Sun, 00 Jan 1994 08:49:37 GMT",
            "Sun, 29 Feb 1900 08:49:37 GMT", "Sun, 31 Apr 1994 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sun, 06 Nov 94 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT",
            "Sun, 06 Nov 1994 08:49:61 GMT", "Sun, 06 Nov 1994 8:49:37 GMT", "Sun, 06 Nov 1994 08:49 GMT",
            "Sun, 06 Nov 0000 08:49:37 GMT", "Sun, -6 Nov 1994 08:49:37 GMT", "Sun, 06 Nov +994 08:49:37 GMT",
            "Funday, 06-Nov-94 08:49:37 GMT", "Sun, 06-Nov-94 08:49:37 GMT", "Sunday, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-9 08:49:37 GMT", "Sun Nov  6 08:49:37 94", "Sun Nov  6 08:49:37", "Xyz Nov  6 08:49:37 1994",
            "Sun, 06 Nov 1994 08:49:37 GMT extra", "Sun,\u{0}06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT\u{202E}",
            "120", "Sun, 99999999999999999999 Nov 1994 08:49:37 GMT",
            String(repeating: "Sun, 06 Nov 1994 08:49:37 GMT ", count: 1_000),
        ])
    func rejectsMalformed(text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }

    @Test("GIVEN the RFC example instant WHEN formatted THEN it is the IMF-fixdate text")
    func formatsIMFFixdate() {
        #expect(HTTPDate.format(rfcExample) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 0)) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: -0.5)) == "Wed, 31 Dec 1969 23:59:59 GMT")
    }

    @Test("GIVEN a fractional instant WHEN formatted THEN the fraction is dropped")
    func dropsFraction() {
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 784_111_777.999)) == "Sun, 06 Nov 1994 08:49:37 GMT")
    }

    @Test("GIVEN extreme instants WHEN formatted THEN they are exact in range and clamp outside it")
    func clampsExtremes() {
        #expect(HTTPDate.format(.distantFuture) == "Mon, 01 Jan 4001 00:00:00 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: .infinity)) == "Fri, 31 Dec 9999 23:59:59 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: -.infinity)) == "Mon, 01 Jan 0001 00:00:00 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: .nan)) == "Thu, 01 Jan 1970 00:00:00 GMT")
    }

    @Test("GIVEN every day across four centuries WHEN formatted and parsed THEN each round-trips")
    func roundTripsManyDays() {
        var failures = 0
        // A step that is not a divisor of 86400 visits many times of day too.
        var seconds: Int64 = -2_208_988_800  // 1900-01-01
        while seconds < 7_258_118_400 {  // 2200-01-01
            let date = Date(timeIntervalSince1970: TimeInterval(seconds))
            if HTTPDate.parse(HTTPDate.format(date)) != date { failures += 1 }
            seconds += 86_400 + 3_607
        }
        #expect(failures == 0)
    }

    @Test("GIVEN Foundation's UTC calendar WHEN a date is formatted THEN weekday and fields agree")
    func agreesWithCalendar() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: "UTC"))
        let date = Date(timeIntervalSince1970: 1_709_210_096)  // 2024-02-29, a Thursday
        let parts = calendar.dateComponents([.year, .month, .day, .weekday], from: date)
        #expect(parts.year == 2024 && parts.month == 2 && parts.day == 29 && parts.weekday == 5)
        #expect(HTTPDate.format(date) == "Thu, 29 Feb 2024 12:34:56 GMT")
    }
}
