import Foundation
import HaulJSON
import Testing

/// `Codable` types to and from `JSONValue`, as `JSONEncoder`/`JSONDecoder` do with their default
/// strategies: the same text (but for `/`), the same errors with the same paths.
@Suite("JSON Codable")
struct JSONCodableTests {
    private struct Inner: Codable, Equatable {
        var name: String
        var flags: [Bool]
    }

    private enum Kind: String, Codable { case one, two }

    private struct Sample: Codable, Equatable {
        var text: String
        var int: Int
        var int64: Int64
        var uint64: UInt64
        var small: UInt8
        var double: Double
        var date: Date
        var optional: String?
        var missing: Int64?
        var bytes: [UInt8]
        var inner: Inner
        var list: [Inner]?
        var map: [String: Int]
        var kind: Kind
    }

    private static let sample = Sample(
        text: "https://h.test/a b\u{08}\u{0C}\"\\é😀", int: -7, int64: .min, uint64: .max, small: 255, double: 0.1,
        date: Date(timeIntervalSinceReferenceDate: 786_000_000.123_456_7), optional: "x", missing: nil, bytes: [0, 1, 255],
        inner: Inner(name: "n", flags: [true, false]), list: [Inner(name: "m", flags: [])], map: ["b": 2, "a": 1], kind: .two)

    @Test("GIVEN a value of every kind WHEN encoded THEN the text is JSONEncoder's with sorted keys, slashes unescaped, and it decodes back")
    func roundTripMatchesFoundation() throws {
        let value = try JSONValue(encoding: Self.sample)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        #expect(value.text == String(decoding: try encoder.encode(Self.sample), as: UTF8.self))
        #expect(try JSONWriter.text(encoding: Self.sample) == value.text)
        #expect(!value.text.contains("missing"))
        #expect(try JSONValue.decode(Sample.self, from: value.text) == Self.sample)
        // What JSONEncoder wrote (slashes escaped) reads alike
        encoder.outputFormatting = [.sortedKeys]
        #expect(try JSONValue.decode(Sample.self, from: String(decoding: try encoder.encode(Self.sample), as: UTF8.self)) == Self.sample)
    }

    private struct Repeated: Encodable {
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: JSONValueKey.self)
            try container.encode(1, forKey: JSONValueKey("b"))
            try container.encode(2, forKey: JSONValueKey("a"))
            try container.encode(3, forKey: JSONValueKey("b"))
        }
    }

    private struct JSONValueKey: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.init(stringValue) }
        init?(intValue: Int) { nil }
    }

    @Test("GIVEN a key encoded twice WHEN written THEN once, with the last value, as JSONEncoder does")
    func aRepeatedKeyKeepsTheLastValue() throws {
        #expect(try JSONWriter.text(encoding: Repeated()) == #"{"a":2,"b":3}"#)
        #expect(try JSONValue(encoding: Repeated()) == ["a": 2, "b": 3])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        #expect(String(decoding: try encoder.encode(Repeated()), as: UTF8.self) == #"{"a":2,"b":3}"#)
    }

    @Test("GIVEN an unsigned 64-bit number above Int64.max WHEN written and read THEN it is exact")
    func largeUnsignedIsExact() throws {
        for number: UInt64 in [.max, .max - 1, UInt64(Int64.max) + 1, 0] {
            let text = try JSONValue(encoding: [number]).text
            #expect(text == "[\(number)]")
            #expect(try JSONWriter.text(encoding: [number]) == text)
            #expect(try JSONValue.decode([UInt64].self, from: text) == [number])
        }
    }

    /// The error decoding `text` as a `T` throws; nil when it decodes.
    private func error<T: Decodable>(_ text: String, as type: T.Type) -> DecodingError? {
        do {
            _ = try JSONValue.decode(type, from: text)
            return nil
        } catch {
            return error
        }
    }

    /// The coding path of a `dataCorrupted`, `typeMismatch` or `valueNotFound` error; nil for another.
    private func path(_ error: DecodingError?, _ expected: String) -> [String]? {
        switch error {
        case .dataCorrupted(let context)? where expected == "dataCorrupted": return context.codingPath.map(\.stringValue)
        case .typeMismatch(_, let context)? where expected == "typeMismatch": return context.codingPath.map(\.stringValue)
        case .valueNotFound(_, let context)? where expected == "valueNotFound": return context.codingPath.map(\.stringValue)
        default: return nil
        }
    }

    @Test("GIVEN text that is not JSON, a missing key, null, or a value of the wrong kind WHEN decoded THEN the error JSONDecoder gives, with its path")
    func errorsSayWhere() {
        #expect(path(error("{damaged", as: Inner.self), "dataCorrupted") == [])
        if case .keyNotFound(let key, _)? = error(#"{"flags":[]}"#, as: Inner.self) {
            #expect(key.stringValue == "name")
        } else {
            Issue.record("a missing key is not keyNotFound")
        }
        #expect(path(error(#"{"name":null,"flags":[]}"#, as: Inner.self), "valueNotFound") == ["name"])
        #expect(path(error(#"{"name":"n","flags":[true,"secret"]}"#, as: Inner.self), "typeMismatch") == ["flags", "Index 1"])
        #expect(path(error("[300]", as: [UInt8].self), "dataCorrupted") == ["Index 0"])
    }
}
