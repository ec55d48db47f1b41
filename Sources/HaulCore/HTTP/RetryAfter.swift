import Foundation

/// The Retry-After response header (RFC 9110 §10.2.3).
package enum RetryAfter {
    /// The longest wait honoured; a server asking for more is treated as asking for this.
    package static let maximumDelay: TimeInterval = 86_400

    /// Seconds to wait from a Retry-After header value: delta-seconds ("120") or an HTTP-date
    /// relative to `now`. Negative results clamp to 0. nil for malformed. Absurd values are
    /// capped at 24 hours (86400), including delta-seconds too large for any integer type.
    package static func delay(fromHeader value: String, now: Date) -> TimeInterval? {
        let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
        if DecimalDigits.isAllDigits(trimmed) {
            // RFC 9111 §1.2.2: an unrepresentable delta-seconds is "very large", not an error.
            guard let seconds = DecimalDigits.nonNegativeInt64(trimmed) else { return maximumDelay }
            return min(TimeInterval(seconds), maximumDelay)
        }
        guard let date = HTTPDate.parse(trimmed, relativeTo: now) else { return nil }
        let wait = date.timeIntervalSince(now)
        guard !wait.isNaN else { return nil }
        return min(max(wait, 0), maximumDelay)
    }
}
