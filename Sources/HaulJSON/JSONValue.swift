import Foundation

/// A JSON value: what `JSONParser` reads, what `JSONWriter` writes, and what `Codable` types
/// become on the way (`JSONValue(encoding:)`, `decoded(as:)`). Haul's one JSON representation: the
/// resume record, a queued download's options and headers, the JSON-RPC server and `--json`.
package enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    /// An integer above `Int64.max` (`.int` holds every other one), kept exact.
    case uint(UInt64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    package var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    package var array: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    package var object: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// An integer, also from a decimal string (aria2 clients send numbers both ways).
    package var integer: Int64? {
        switch self {
        case .int(let value): return value
        case .double(let value) where value == value.rounded() && abs(value) < 9e15: return Int64(value)
        case .string(let value): return Int64(value)
        default: return nil
        }
    }

    package subscript(key: String) -> JSONValue? {
        object?[key]
    }

    /// Parses `data`; nil when it is not JSON or nests deeper than `JSONParser.maximumDepth`.
    package static func parse(_ data: Data) -> JSONValue? {
        try? JSONParser.parse(data)
    }

    /// Compact JSON text (keys sorted, so output is stable), as `JSONWriter` writes it.
    package func serialized() -> Data {
        var writer = JSONWriter()
        writer.write(self)
        return Data(writer.bytes)
    }

    /// `serialized()` as a string.
    package var text: String {
        var writer = JSONWriter()
        writer.write(self)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// Parses `text` (`JSONParser.parse`).
    package static func parse(text: String) throws(JSONParseError) -> JSONValue {
        try JSONParser.parse(Data(text.utf8))
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    package init(integerLiteral value: Int64) {
        self = .int(value)
    }

    package init(stringLiteral value: String) {
        self = .string(value)
    }

    package init(arrayLiteral elements: JSONValue...) {
        self = .array(elements)
    }

    package init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
