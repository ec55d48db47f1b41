import Testing

@testable import HaulCore

@Suite("ByteRangeSpec")
struct ByteRangeSpecTests {
    @Test(
        "GIVEN the three CLI forms WHEN parsed THEN each maps to its case",
        arguments: [
            ("0-99", ByteRangeSpec.closed(first: 0, last: 99)),
            ("5-5", .closed(first: 5, last: 5)),
            ("100-", .from(first: 100)),
            ("0-", .from(first: 0)),
            ("-500", .suffix(length: 500)),
            ("bytes=0-99", .closed(first: 0, last: 99)),
            ("BYTES=-1", .suffix(length: 1)),
            ("  7-  ", .from(first: 7)),
            ("0009-0010", .closed(first: 9, last: 10)),
        ])
    func parsesValidForms(text: String, expected: ByteRangeSpec) throws {
        let spec = try ByteRangeSpec(parsing: text)
        #expect(spec == expected)
    }

    @Test("GIVEN the largest Int64 bounds WHEN parsed THEN they are kept exactly")
    func parsesInt64Max() throws {
        let spec = try ByteRangeSpec(parsing: "0-9223372036854775807")
        #expect(spec == .closed(first: 0, last: Int64.max))
        #expect(try ByteRangeSpec(parsing: "-9223372036854775807") == .suffix(length: .max))
    }

    @Test(
        "GIVEN malformed or hostile input WHEN parsed THEN it throws",
        arguments: [
            "", "   ", "-", "5-3", "-0", "abc", "1-x", "x-1", "0-1,5-6", "0-1,",
            "+5-", "5-+6", "-+5", "--5", "5--6", "1.5-2", "0x10-", "1 - 2", "bytes=", "bytes=-",
            "9223372036854775808-", "0-9223372036854775808", "-99999999999999999999999",
            "٣-٤", "1e3-", "5", "bytes 0-1", String(repeating: "9", count: 10_000) + "-",
        ])
    func rejectsMalformed(text: String) {
        #expect(throws: ByteRangeSpecError.self) { try ByteRangeSpec(parsing: text) }
    }

    @Test("GIVEN last before first WHEN parsed THEN the message names both bytes")
    func reversedMessage() {
        #expect(
            throws: ByteRangeSpecError(
                message: "invalid byte range \"5-3\": last byte 3 is before first byte 5")
        ) {
            try ByteRangeSpec(parsing: "5-3")
        }
    }

    @Test("GIVEN an overflowing number WHEN parsed THEN the message says it is too large")
    func overflowMessage() throws {
        let error = try #require(throws: ByteRangeSpecError.self) {
            try ByteRangeSpec(parsing: "99999999999999999999-")
        }
        #expect(error.message.contains("too large"))
    }

    @Test("GIVEN a huge garbage input WHEN parsed THEN the message quotes only its start")
    func longInputMessage() throws {
        let error = try #require(throws: ByteRangeSpecError.self) {
            try ByteRangeSpec(parsing: String(repeating: "x", count: 100_000))
        }
        #expect(error.message.count < 200)
    }

    @Test("GIVEN several ranges WHEN parsed THEN the message says only one is supported")
    func multiRangeMessage() throws {
        let error = try #require(throws: ByteRangeSpecError.self) { try ByteRangeSpec(parsing: "0-1,5-6") }
        #expect(error.message.contains("only one range"))
    }

    @Test(
        "GIVEN each case WHEN rendered THEN the Range header value follows RFC 9110",
        arguments: [
            (ByteRangeSpec.closed(first: 0, last: 99), "bytes=0-99"),
            (.from(first: 100), "bytes=100-"),
            (.suffix(length: 500), "bytes=-500"),
            (.closed(first: .max, last: .max), "bytes=9223372036854775807-9223372036854775807"),
        ])
    func headerValue(spec: ByteRangeSpec, expected: String) {
        #expect(spec.headerValue == expected)
    }

    @Test("GIVEN a header value WHEN parsed back THEN it round-trips")
    func roundTrip() throws {
        for text in ["bytes=3-9", "bytes=42-", "bytes=-7"] {
            #expect(try ByteRangeSpec(parsing: text).headerValue == text)
        }
    }
}
