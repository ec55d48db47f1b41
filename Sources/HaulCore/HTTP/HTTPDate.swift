import Foundation

/// HTTP dates (RFC 9110 §5.6.7), parsed and formatted by hand.
///
/// `DateFormatter` is locale-sensitive and slow to create; the grammar is small and fixed,
/// so a hand parser is both faster and safe to call from any thread.
package enum HTTPDate {
    /// Parses IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), obsolete RFC 850
    /// ("Sunday, 06-Nov-94 08:49:37 GMT") and asctime ("Sun Nov  6 08:49:37 1994"). nil if malformed.
    ///
    /// Day and month names are matched case-insensitively; the weekday is not checked
    /// against the date, since a wrong one does not make the instant ambiguous.
    package static func parse(_ text: String) -> Date? {
        parse(text, relativeTo: Date())
    }

    /// Like `parse(_:)`, with the "now" that places a two-digit RFC 850 year
    /// in its century made explicit (RFC 9110 §5.6.7: a year more than 50 years
    /// in the future means the most recent past year with those digits).
    package static func parse(_ text: String, relativeTo now: Date) -> Date? {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        // Only printable ASCII can appear in any of the three forms; this also keeps
        // the Character-based splitting below from meeting grapheme clusters.
        guard trimmed.utf8.count <= 64, trimmed.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else {
            return nil
        }

        let fields: CivilTime?
        if let comma = trimmed.firstIndex(of: ",") {
            let dayName = trimmed[..<comma]
            let rest = trimmed[trimmed.index(after: comma)...]
            if shortDayNames.contains(dayName.lowercased()) {
                fields = parseIMFFixdate(rest)
            } else if longDayNames.contains(dayName.lowercased()) {
                fields = parseRFC850(rest, now: now)
            } else {
                fields = nil
            }
        } else {
            fields = parseAsctime(trimmed)
        }
        guard let fields, fields.isValid else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(fields.secondsSince1970))
    }

    /// Formats as IMF-fixdate, e.g. "Sun, 06 Nov 1994 08:49:37 GMT".
    ///
    /// Fractions of a second are dropped; dates outside years 1...9999 are clamped to that range.
    package static func format(_ date: Date) -> String {
        let minSeconds = CivilTime.secondsSince1970(year: 1, month: 1, day: 1)
        let maxSeconds = CivilTime.secondsSince1970(year: 9999, month: 12, day: 31) + 86_399
        let raw = date.timeIntervalSince1970
        let seconds: Int64
        if raw.isNaN {
            seconds = 0
        } else if raw <= Double(minSeconds) {
            seconds = minSeconds
        } else if raw >= Double(maxSeconds) {
            seconds = maxSeconds
        } else {
            seconds = Int64(raw.rounded(.down))
        }

        let days = floorDivide(seconds, 86_400)
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = CivilTime.civil(fromDays: days)
        // 1970-01-01 was a Thursday (index 4 with Sunday as 0).
        let weekday = Int(floorModulo(days + 4, 7))
        let hour = secondOfDay / 3600
        let minute = secondOfDay / 60 % 60
        let second = secondOfDay % 60
        return "\(shortDayTitles[weekday]), \(pad(day, 2)) \(monthTitles[Int(month) - 1]) \(pad(year, 4)) "
            + "\(pad(hour, 2)):\(pad(minute, 2)):\(pad(second, 2)) GMT"
    }

    // MARK: - The three forms

    /// `" 06 Nov 1994 08:49:37 GMT"` (after the day name and comma).
    private static func parseIMFFixdate(_ rest: Substring) -> CivilTime? {
        let parts = rest.split(separator: " ")
        guard parts.count == 5, isGMT(parts[4]),
            let day = twoDigitDay(parts[0]),
            let month = month(parts[1]),
            let year = fourDigitYear(parts[2])
        else { return nil }
        return clock(parts[3], year: year, month: month, day: day)
    }

    /// `" 06-Nov-94 08:49:37 GMT"`; a four-digit year is accepted too, as some servers send it.
    private static func parseRFC850(_ rest: Substring, now: Date) -> CivilTime? {
        let parts = rest.split(separator: " ")
        guard parts.count == 3, isGMT(parts[2]) else { return nil }
        let date = parts[0].split(separator: "-", omittingEmptySubsequences: false)
        guard date.count == 3,
            let day = twoDigitDay(date[0]),
            let month = month(date[1])
        else { return nil }
        let year: Int64
        if let full = fourDigitYear(date[2]) {
            year = full
        } else if date[2].utf8.count == 2, let twoDigits = DecimalDigits.nonNegativeInt64(date[2]) {
            year = centuryYear(twoDigits, now: now)
        } else {
            return nil
        }
        return clock(parts[1], year: year, month: month, day: day)
    }

    /// `"Sun Nov  6 08:49:37 1994"`; the day may be space-padded or zero-padded.
    private static func parseAsctime(_ text: String) -> CivilTime? {
        let parts = text.split(separator: " ")
        guard parts.count == 5,
            shortDayNames.contains(parts[0].lowercased()),
            let month = month(parts[1]),
            let day = twoDigitDay(parts[2]),
            let year = fourDigitYear(parts[4])
        else { return nil }
        return clock(parts[3], year: year, month: month, day: day)
    }

    // MARK: - Pieces

    private static func clock(_ text: Substring, year: Int64, month: Int64, day: Int64) -> CivilTime? {
        let pieces = text.split(separator: ":", omittingEmptySubsequences: false)
        guard pieces.count == 3, pieces.allSatisfy({ $0.utf8.count == 2 }),
            let hour = DecimalDigits.nonNegativeInt64(pieces[0]),
            let minute = DecimalDigits.nonNegativeInt64(pieces[1]),
            let second = DecimalDigits.nonNegativeInt64(pieces[2])
        else { return nil }
        return CivilTime(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
    }

    private static func twoDigitDay(_ text: Substring) -> Int64? {
        guard (1...2).contains(text.utf8.count) else { return nil }
        return DecimalDigits.nonNegativeInt64(text)
    }

    private static func fourDigitYear(_ text: Substring) -> Int64? {
        guard text.utf8.count == 4 else { return nil }
        return DecimalDigits.nonNegativeInt64(text)
    }

    private static func month(_ text: Substring) -> Int64? {
        let lowered = text.lowercased()
        guard let index = monthTitles.firstIndex(where: { $0.lowercased() == lowered }) else { return nil }
        return Int64(index + 1)
    }

    /// GMT, or a name of the same zone that servers send instead (curl's `-R` reads them too).
    private static func isGMT(_ text: Substring) -> Bool {
        ["gmt", "utc", "ut", "z", "+0000", "-0000"].contains(text.lowercased())
    }

    private static func centuryYear(_ twoDigits: Int64, now: Date) -> Int64 {
        let raw = now.timeIntervalSince1970
        // Keep Int64 conversion safe for NaN, infinities and absurd instants.
        let nowSeconds = raw.isFinite ? Swift.min(Swift.max(raw, -1e15), 1e15).rounded(.down) : 0
        let nowDays = floorDivide(Int64(nowSeconds), 86_400)
        let currentYear = CivilTime.civil(fromDays: nowDays).year
        var year = currentYear - floorModulo(currentYear, 100) + twoDigits
        if year > currentYear + 50 { year -= 100 }
        return year
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }

    private static let shortDayTitles = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let shortDayNames: Set<String> = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
    private static let longDayNames: Set<String> = [
        "sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
    ]
    private static let monthTitles = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
}

/// A broken-down UTC time and the calendar arithmetic behind `HTTPDate` and `CookieDate`.
struct CivilTime {
    var year: Int64
    var month: Int64
    var day: Int64
    var hour: Int64
    var minute: Int64
    var second: Int64

    /// Range checks; second 60 is allowed for a leap second and rolls into the next minute.
    var isValid: Bool {
        (1...9999).contains(year) && (1...12).contains(month)
            && (1...Self.daysInMonth(year: year, month: month)).contains(day)
            && (0...23).contains(hour) && (0...59).contains(minute) && (0...60).contains(second)
    }

    var secondsSince1970: Int64 {
        Self.secondsSince1970(year: year, month: month, day: day) + hour * 3600 + minute * 60 + second
    }

    static func secondsSince1970(year: Int64, month: Int64, day: Int64) -> Int64 {
        days(year: year, month: month, day: day) * 86_400
    }

    static func daysInMonth(year: Int64, month: Int64) -> Int64 {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    static func isLeap(_ year: Int64) -> Bool {
        (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's days_from_civil).
    static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = floorDivide(shiftedYear, 400)
        let yearOfEra = shiftedYear - era * 400
        let monthFromMarch = (month + 9) % 12
        let dayOfYear = (153 * monthFromMarch + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The inverse of `days(year:month:day:)` (Howard Hinnant's civil_from_days).
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let era = floorDivide(shifted, 146_097)
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthFromMarch = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
        let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }
}

private func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
    let quotient = value / divisor
    return (value % divisor != 0 && (value < 0) != (divisor < 0)) ? quotient - 1 : quotient
}

private func floorModulo(_ value: Int64, _ divisor: Int64) -> Int64 {
    value - floorDivide(value, divisor) * divisor
}
