/// Strict ASCII decimal parsing shared by the header parsers.
///
/// `Int64(String)` accepts a leading "+" or "-", which no HTTP grammar here allows,
/// so the parsers use this instead.
enum DecimalDigits {
    /// The value of a non-empty run of ASCII digits, or nil for anything else
    /// (signs, spaces, other characters, or a value beyond `Int64.max`).
    static func nonNegativeInt64<Text: StringProtocol>(_ text: Text) -> Int64? {
        guard !text.utf8.isEmpty else { return nil }
        var value: Int64 = 0
        for byte in text.utf8 {
            guard let digit = digitValue(byte) else { return nil }
            let (shifted, overflowA) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflowB) = shifted.addingReportingOverflow(digit)
            guard !overflowA, !overflowB else { return nil }
            value = sum
        }
        return value
    }

    /// True when `text` is non-empty and made only of ASCII digits, however many.
    static func isAllDigits<Text: StringProtocol>(_ text: Text) -> Bool {
        !text.utf8.isEmpty && text.utf8.allSatisfy { digitValue($0) != nil }
    }

    private static func digitValue(_ byte: UInt8) -> Int64? {
        guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
        return Int64(byte - UInt8(ascii: "0"))
    }
}
