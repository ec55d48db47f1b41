import Foundation
import HaulJSON
import Testing

@Suite("JSON parser (bounded) and writer")
struct JSONParserTests {
    func parse(_ text: String) -> JSONValue? {
        try? JSONParser.parse(Data(text.utf8))
    }

    @Test func readsWhatJSONRPCClientsSend() {
        #expect(
            parse(#"{"jsonrpc":"2.0","id":"q1","method":"aria2.addUri","params":["token:s",["http://x/"],{"split":"4"}]}"#)
                == ["jsonrpc": "2.0", "id": "q1", "method": "aria2.addUri", "params": ["token:s", ["http://x/"], ["split": "4"]]])
        #expect(parse(" [1, -2, 3.5, 1e3, true, false, null] ") == [.int(1), .int(-2), .double(3.5), .double(1000), .bool(true), .bool(false), .null])
        #expect(parse(#""a\"b\\c\/d\n\u00e9\ud83d\ude00""#) == .string("a\"b\\c/d\né😀"))
        #expect(parse("9223372036854775807") == .int(.max))
        #expect(parse("-9223372036854775808") == .int(.min))
        // Above Int64.max and up to UInt64.max kept exact (a file's inode); beyond, a double
        #expect(parse("9223372036854775808") == .uint(9_223_372_036_854_775_808))
        #expect(parse("18446744073709551615") == .uint(.max))
        #expect(parse("18446744073709551616") == .double(18_446_744_073_709_551_616))
        #expect(parse("-9223372036854775809") == .double(-0x1p63))
    }

    @Test func refusesWhatIsNotJSON() {
        for text in [
            "", "[", "]", "{", "[1,]", "{\"a\":}", "{\"a\" 1}", "{1:2}", "01", "1.", ".5", "-", "1e", "tru", "nul", "\"abc", "\"\\x\"",
            "\"\\ud800\"", "\"\\udc00\"", "\"\\u12\"", "[1] [2]", "\"a\u{1}b\"", "1e999", "NaN",
        ] {
            #expect(parse(text) == nil, "\(text.debugDescription) parsed")
        }
        // Invalid UTF-8 inside a string is an error, never replaced
        #expect((try? JSONParser.parse(Data([0x22, 0xFF, 0xFE, 0x22]))) == nil)
    }

    @Test func nestingIsBoundedWhateverTheInput() {
        func nested(_ depth: Int, open: String = "[", close: String = "]") -> String {
            String(repeating: open, count: depth) + String(repeating: close, count: depth)
        }
        // GIVEN nesting at the limit: parsed
        #expect(parse(nested(JSONParser.maximumDepth)) != nil)
        #expect(parse(String(repeating: "{\"a\":", count: JSONParser.maximumDepth) + "1" + String(repeating: "}", count: JSONParser.maximumDepth)) != nil)
        // WHEN one deeper, or a hundred thousand deep, or never closed
        for text in [
            nested(JSONParser.maximumDepth + 1), nested(100_000), String(repeating: "[", count: 1_000_000), String(repeating: "[{\"a\":", count: 50_000),
        ] {
            // THEN it is refused as too deep (not a crash)
            #expect(throws: JSONParseError.tooDeep) { try JSONParser.parse(Data(text.utf8)) }
        }
    }

    @Test func writerOutputParsesBackToTheSameValue() {
        let value: JSONValue = [
            "b": [.int(.min), .int(.max), .double(0.25), .null, .bool(true)], "a": "quote\" slash/ back\\ tab\t nl\n \u{1} é 😀",
            "nested": [["x": []], [:]],
        ]
        let text = String(decoding: value.serialized(), as: UTF8.self)
        #expect(text.hasPrefix(#"{"a":"quote\" slash/ back\\ tab\t nl\n \u0001 é 😀","b":["#))
        #expect(parse(text) == value)
    }
}
