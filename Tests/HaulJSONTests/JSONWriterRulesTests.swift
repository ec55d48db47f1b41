import Foundation
import HaulJSON
import Testing

/// Haul writes JSON by one set of rules, wherever it writes it (the resume record, stored
/// options and headers, the JSON-RPC server, `--json`): these are the rules, and they are
/// `JSONSerialization`'s with `.withoutEscapingSlashes` byte for byte.
@Suite("JSON writer rules")
struct JSONWriterRulesTests {
    private func written(_ value: JSONValue) -> String {
        String(decoding: value.serialized(), as: UTF8.self)
    }

    private func foundation(_ object: Any) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]), as: UTF8.self)
    }

    @Test("GIVEN a slash, backspace and form feed WHEN written THEN the slash stays, the two take their short escapes")
    func slashBackspaceAndFormFeed() {
        #expect(written("a/b") == #""a/b""#)
        #expect(written("\u{08}") == #""\b""#)
        #expect(written("\u{0C}") == #""\f""#)
        #expect(JSONWriter.quoted("x/\u{08}\u{0C}\n\r\t\"\\") == #""x/\b\f\n\r\t\"\\""#)
    }

    @Test("GIVEN every ASCII character and characters beyond WHEN written THEN exactly as JSONSerialization writes them")
    func everyCharacterAsFoundationWritesIt() throws {
        for scalar in 0..<0x80 {
            let text = "a" + String(UnicodeScalar(UInt8(scalar))) + "b"
            #expect(written(.array([.string(text)])) == (try foundation([text])), "byte \(scalar)")
        }
        // Control characters other than the five with short escapes: \u00XX, lower-case hex
        #expect(written("\u{00}\u{01}\u{1B}\u{1F}") == #""\u0000\u0001\u001b\u001f""#)
        // Non-ASCII, non-BMP, DEL, line and paragraph separators: as their UTF-8
        for text in ["é ü ß 東京", "🚀😀", "\u{7F}", "\u{2028}\u{2029}", "e\u{301}", "\u{10FFFF}"] {
            #expect(written(.string(text)) == "\"" + text + "\"")
            #expect(written(.array([.string(text)])) == (try foundation([text])))
            #expect(JSONValue.parse(Data(written(.string(text)).utf8)) == .string(text))
        }
    }

    @Test("GIVEN numbers of every kind WHEN written THEN as JSONSerialization writes them: no .0 on a whole one, -0 kept")
    func numbersAsFoundationWritesThem() throws {
        let doubles: [Double] = [
            0, -0.0, 1, -3.5, 0.1, 1e-7, 2.5e-5, 123.456, 1e15, 4e15, 9_007_199_254_740_992, 1e16, 1e20, 1e21, 3.25e12,
            0.300_000_000_000_000_04, 786_000_000.123_456_7, .greatestFiniteMagnitude, .leastNonzeroMagnitude,
        ]
        for number in doubles {
            #expect(written(.array([.double(number)])) == (try foundation([number])), "\(number)")
            // and reads back as the same number
            let back = JSONValue.parse(Data(written(.double(number)).utf8))
            #expect(try back?.decoded(as: Double.self) == number, "\(number)")
        }
        #expect(written(.double(-0.0)) == "-0")
        #expect(written(.double(1e15)) == "1000000000000000")
        #expect(written([.int(.min), .int(.max), .uint(.max)]) == "[-9223372036854775808,9223372036854775807,18446744073709551615]")
    }

    @Test("GIVEN NaN or an infinity WHEN written THEN null: JSON has neither, and the rest of the value is still written")
    func nonFiniteNumbersAreNull() {
        #expect(written(["a": .double(.nan), "b": .double(.infinity), "c": .double(-.infinity), "d": 1]) == #"{"a":null,"b":null,"c":null,"d":1}"#)
    }

    @Test("GIVEN an object WHEN written THEN its keys are sorted")
    func keysAreSorted() {
        #expect(written(["b": 1, "a": ["z": .bool(true), "y": .null], "B": "x"]) == #"{"B":"x","a":{"y":null,"z":true},"b":1}"#)
    }
}
