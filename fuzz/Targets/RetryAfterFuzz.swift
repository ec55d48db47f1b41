// Retry-After and HTTP dates. Checks: a delay is always within [0, 24 h]; every parsed date lies in
// years 1...9999 and formats to an IMF-fixdate that parses back to the same instant; formatting
// any instant (NaN, infinities, far past/future) never traps and always parses back.

import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let nowBits = input.uint64()
    let text = input.remainingText
    let candidates = [
        Date(timeIntervalSince1970: 1_700_000_000),
        Date(timeIntervalSince1970: Double(bitPattern: nowBits)),
        Date(timeIntervalSince1970: Double(Int64(bitPattern: nowBits) % 400_000_000_000)),
    ]

    for now in candidates {
        if let delay = RetryAfter.delay(fromHeader: text, now: now) {
            require(delay >= 0 && delay <= RetryAfter.maximumDelay, "delay \(delay) from \(text.debugDescription) at \(now.timeIntervalSince1970)")
        }
        if let date = HTTPDate.parse(text, relativeTo: now) { checkRoundTrip(date, from: text) }
    }

    // Any instant at all can be formatted, and the result parses back to the clamped whole second.
    let instant = Date(timeIntervalSince1970: Double(bitPattern: nowBits))
    let formatted = HTTPDate.format(instant)
    guard let parsed = HTTPDate.parse(formatted) else {
        violated("format(\(instant.timeIntervalSince1970)) = \(formatted.debugDescription) does not parse")
    }
    let raw = instant.timeIntervalSince1970
    if raw.isFinite, raw > -62_135_596_800, raw < 253_402_300_799 {
        require(parsed.timeIntervalSince1970 == raw.rounded(.down), "format/parse moved \(raw) to \(parsed.timeIntervalSince1970)")
    }
    return 0
}

private func checkRoundTrip(_ date: Date, from text: String) {
    let seconds = date.timeIntervalSince1970
    // 0001-01-01T00:00:00Z ... 9999-12-31T23:59:60Z (a leap second rolls into the next minute).
    require(seconds >= -62_135_596_800 && seconds <= 253_402_300_800, "date \(seconds) out of range from \(text.debugDescription)")
    require(seconds == seconds.rounded(.down), "fractional date \(seconds) from \(text.debugDescription)")
    guard seconds < 253_402_300_800 else { return }  // 9999-12-31 23:59:60 has no IMF-fixdate
    let formatted = HTTPDate.format(date)
    require(HTTPDate.parse(formatted) == date, "round trip \(text.debugDescription) -> \(formatted.debugDescription)")
}
