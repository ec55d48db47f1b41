import Testing

@testable import HaulCore

@Suite("ContentRange")
struct ContentRangeTests {
    @Test("GIVEN a satisfied range with a known length WHEN parsed THEN all parts are set")
    func parsesFullForm() throws {
        let range = try #require(ContentRange(headerValue: "bytes 0-499/1234"))
        #expect(range == ContentRange(first: 0, last: 499, completeLength: 1234))
        #expect(range.length == 500)
        #expect(!range.isUnsatisfied)
    }

    @Test("GIVEN an unknown complete length WHEN parsed THEN completeLength is nil")
    func parsesUnknownLength() throws {
        let range = try #require(ContentRange(headerValue: "bytes 500-999/*"))
        #expect(range == ContentRange(first: 500, last: 999, completeLength: nil))
        #expect(range.length == 500)
    }

    @Test("GIVEN the unsatisfied form WHEN parsed THEN only the complete length is set")
    func parsesUnsatisfied() throws {
        let range = try #require(ContentRange(headerValue: "bytes */1234"))
        #expect(range == ContentRange(first: nil, last: nil, completeLength: 1234))
        #expect(range.length == nil)
        #expect(range.isUnsatisfied)
    }

    @Test(
        "GIVEN odd but valid spelling WHEN parsed THEN it is accepted",
        arguments: [
            ("  BYTES 0-0/1  ", ContentRange(first: 0, last: 0, completeLength: 1)),
            ("Bytes\t1-2/3", ContentRange(first: 1, last: 2, completeLength: 3)),
            ("bytes   5-9/10", ContentRange(first: 5, last: 9, completeLength: 10)),
            (
                "bytes 0-9223372036854775806/9223372036854775807",
                ContentRange(first: 0, last: .max - 1, completeLength: .max)
            ),
            ("bytes */0", ContentRange(first: nil, last: nil, completeLength: 0)),
        ])
    func acceptsVariants(text: String, expected: ContentRange) {
        #expect(ContentRange(headerValue: text) == expected)
    }

    @Test(
        "GIVEN malformed or hostile input WHEN parsed THEN the result is nil",
        arguments: [
            "", "   ", "bytes", "bytes ", "bytes */*", "items 0-1/2", "bytes=0-1/2", "bytes0-1/2",
            "bytes 5-3/10", "bytes 0-10/10", "bytes 0-10/5", "bytes 0-1", "bytes 0-/5", "bytes -1/5",
            "bytes 0-1/", "bytes /5", "bytes -5-3/10", "bytes 0--1/5", "bytes +0-1/5", "bytes 0-1/-5",
            "bytes 0-1/99999999999999999999", "bytes 0-99999999999999999999/*",
            "bytes 1 - 2/3", "bytes 0-1/2/3", "bytes 0-1/2 extra", "bytes 0x0-0x1/2", "bytes a-b/c",
            "bytes */1,2", "bytes 0-9223372036854775807/*",
            "bytes 0-1/" + String(repeating: "9", count: 5_000),
        ])
    func rejectsMalformed(text: String) {
        #expect(ContentRange(headerValue: text) == nil)
    }

    @Test("GIVEN the widest span whose end offset (last + 1) Int64 allows WHEN parsed THEN length is exact")
    func widestSpan() throws {
        let range = try #require(ContentRange(headerValue: "bytes 0-9223372036854775806/*"))
        #expect(range.length == .max)
    }

    @Test("GIVEN inconsistent hand-built parts WHEN length is asked THEN it is nil, not a crash")
    func inconsistentLength() {
        #expect(ContentRange(first: 9, last: 3, completeLength: nil).length == nil)
        #expect(ContentRange(first: 0, last: .max, completeLength: nil).length == nil)
        #expect(ContentRange(first: 3, last: nil, completeLength: 5).length == nil)
    }
}

@Suite("ContentRange end offsets")
struct ContentRangeEndTests {
    @Test func aSpanEndingAtInt64MaxIsRefused() {
        // A fuzzed response once trapped on last + 1.
        #expect(ContentRange(headerValue: "bytes 1100-9223372036854775807/*") == nil)
        #expect(ContentRange(headerValue: "bytes 0-9223372036854775806/*") != nil)
    }
}
