import Foundation
import Testing

@testable import HaulCore

@Suite("EntityTag")
struct EntityTagTests {
    @Test(
        "GIVEN valid header forms WHEN parsed THEN weakness and opaque tag are kept",
        arguments: [
            ("\"abc\"", false, "\"abc\""),
            ("W/\"abc\"", true, "\"abc\""),
            ("  \"x-1:2\"  ", false, "\"x-1:2\""),
            ("\"\"", false, "\"\""),
            ("W/\"\"", true, "\"\""),
            ("\"über\"", false, "\"über\""),
            ("\"a,b\"", false, "\"a,b\""),
        ])
    func parsesQuoted(text: String, isWeak: Bool, opaqueTag: String) throws {
        let tag = try #require(EntityTag(headerValue: text))
        #expect(tag.isWeak == isWeak)
        #expect(tag.opaqueTag == opaqueTag)
    }

    @Test("GIVEN an unquoted token WHEN parsed THEN it is leniently wrapped in quotes")
    func parsesUnquoted() throws {
        #expect(EntityTag(headerValue: "abc123") == EntityTag(isWeak: false, opaqueTag: "\"abc123\""))
        #expect(EntityTag(headerValue: "W/abc") == EntityTag(isWeak: true, opaqueTag: "\"abc\""))
    }

    @Test(
        "GIVEN malformed or hostile input WHEN parsed THEN the result is nil",
        arguments: [
            "", "   ", "\"", "W/", "W/\"", "\"abc", "abc\"", "\"a\"b\"", "\"a\" \"b\"", "\"a\", \"b\"",
            "\"a b\"", "a b", "\"a\u{0}b\"", "\"a\nb\"", "\"a\u{7F}\"", "\"a\u{85}\"", "\"\t\"",
            "w/\"abc\"x", "W/ \"abc\"", "\"abc\"W/",
        ])
    func rejectsMalformed(text: String) {
        #expect(EntityTag(headerValue: text) == nil)
    }

    @Test("GIVEN a very long tag WHEN parsed THEN it is kept intact")
    func longTag() throws {
        let body = String(repeating: "a", count: 100_000)
        let tag = try #require(EntityTag(headerValue: "\"\(body)\""))
        #expect(tag.opaqueTag.count == 100_002)
    }

    @Test("GIVEN parsed tags WHEN rendered THEN the header form round-trips")
    func headerValueRoundTrip() throws {
        for text in ["\"abc\"", "W/\"abc\"", "\"\""] {
            #expect(try #require(EntityTag(headerValue: text)).headerValue == text)
        }
        #expect(EntityTag(headerValue: "bare")?.headerValue == "\"bare\"")
    }

    @Test(
        "GIVEN pairs of tags WHEN compared strongly THEN only two equal strong tags match",
        arguments: [
            ("\"1\"", "\"1\"", true),
            ("W/\"1\"", "W/\"1\"", false),
            ("W/\"1\"", "\"1\"", false),
            ("\"1\"", "W/\"1\"", false),
            ("\"1\"", "\"2\"", false),
        ])
    func strongComparison(lhs: String, rhs: String, matches: Bool) throws {
        let left = try #require(EntityTag(headerValue: lhs))
        let right = try #require(EntityTag(headerValue: rhs))
        #expect(left.stronglyMatches(right) == matches)
    }

    @Test("GIVEN weak and strong tags with the same opaque tag WHEN compared weakly THEN they match")
    func weakComparison() throws {
        let weak = try #require(EntityTag(headerValue: "W/\"1\""))
        let strong = try #require(EntityTag(headerValue: "\"1\""))
        let other = try #require(EntityTag(headerValue: "\"2\""))
        #expect(weak.weaklyMatches(strong))
        #expect(!weak.weaklyMatches(other))
    }

    @Test("GIVEN a tag WHEN encoded and decoded as JSON THEN it is unchanged")
    func codableRoundTrip() throws {
        let tag = EntityTag(isWeak: true, opaqueTag: "\"v1\"")
        let data = try JSONEncoder().encode(tag)
        #expect(try JSONDecoder().decode(EntityTag.self, from: data) == tag)
    }
}

@Suite("EntityTag and combining marks")
struct EntityTagScalarTests {
    @Test func aQuoteFollowedByACombiningMarkStillCloses() throws {
        // GIVEN a tag whose opening quote is followed by a combining mark
        let tag = try #require(EntityTag(headerValue: "\"\u{301}abc\""))
        // THEN it round-trips through its header form
        #expect(EntityTag(headerValue: tag.headerValue) == tag)
        #expect(tag.opaqueTag == "\"\u{301}abc\"")
    }
}

@Suite("EntityTag comparison, byte for byte")
struct EntityTagByteComparisonTests {
    @Test func canonicallyEquivalentTagsAreDifferentTags() throws {
        // GIVEN two tags that Swift's String == calls equal: "é" precomposed, and "e" + U+0301
        let precomposed = try #require(EntityTag(headerValue: "\"\u{E9}\""))
        let decomposed = try #require(EntityTag(headerValue: "\"e\u{301}\""))
        let weakDecomposed = try #require(EntityTag(headerValue: "W/\"e\u{301}\""))
        #expect(precomposed.opaqueTag == decomposed.opaqueTag, "the premise: String == is canonical equivalence")

        // WHEN they are compared as HTTP compares tags
        // THEN they differ, strongly and weakly, and a response showing one conflicts with the other
        #expect(!precomposed.stronglyMatches(decomposed))
        #expect(!precomposed.weaklyMatches(weakDecomposed))
        #expect(Validators(etag: precomposed).conflicts(with: Validators(etag: decomposed)))
        #expect(Validators(etag: precomposed).conflicts(with: Validators(etag: weakDecomposed)))
        #expect(!Validators(etag: precomposed).isShown(by: Validators(etag: decomposed)))
        // AND a tag still matches itself
        #expect(precomposed.stronglyMatches(try #require(EntityTag(headerValue: "\"\u{E9}\""))))
    }
}
