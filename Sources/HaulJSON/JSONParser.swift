import Foundation

/// Why a request body is not a JSON value.
package enum JSONParseError: Error, Sendable, Equatable {
    /// Not JSON at `offset` (a byte index into the input).
    case malformed(offset: Int)
    /// Arrays and objects nested deeper than `JSONParser.maximumDepth`.
    case tooDeep
    /// More values (numbers, strings, literals, arrays, objects, keys not counted) than the
    /// caller allowed.
    case tooManyValues(limit: Int)
}

/// RFC 8259 JSON from bytes, with a bound on nesting.
///
/// A request arrives from any local process before its token is checked, so parsing must be
/// safe on every input: nesting is bounded (`maximumDepth`; Foundation's decoder recurses without
/// a bound, and 45 levels of `[` overflowed a 100 KiB server thread), every number, string and
/// escape is checked, and nothing is decoded lossily (invalid UTF-8 and lone surrogates are
/// errors). Integers that fit become `.int`, larger ones that fit 64 bits unsigned `.uint` (a file's
/// inode or device number, kept exact), other numbers `.double`.
package struct JSONParser {
    /// The deepest nesting taken. aria2's requests need at most 8 (a batch of `system.multicall`
    /// holding `addUri` with a `header` list); 32 leaves room and bounds the recursion here and in
    /// everything that walks a parsed value (the writer, the handlers).
    package static let maximumDepth = 32

    private let bytes: [UInt8]
    private var index = 0
    /// Values that may still be read.
    private var valuesLeft: Int
    private let maximumValues: Int

    private init(_ bytes: [UInt8], maximumValues: Int) {
        self.bytes = bytes
        self.maximumValues = maximumValues
        valuesLeft = maximumValues
    }

    /// The value `data` holds (surrounding whitespace allowed, nothing else after it), made of at
    /// most `maximumValues` values: a caller that must bound the memory a parsed tree takes
    /// (a small value costs tens of bytes in the tree for each byte of input) says how many.
    package static func parse(_ data: Data, maximumValues: Int = .max) throws(JSONParseError) -> JSONValue {
        var parser = JSONParser([UInt8](data), maximumValues: maximumValues)
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.index == parser.bytes.count else { throw .malformed(offset: parser.index) }
        return value
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
    }

    private mutating func value(depth: Int) throws(JSONParseError) -> JSONValue {
        guard valuesLeft > 0 else { throw .tooManyValues(limit: maximumValues) }
        valuesLeft -= 1
        skipWhitespace()
        guard let byte = current else { throw .malformed(offset: index) }
        switch byte {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw .malformed(offset: index)
        }
    }

    private mutating func literal(_ word: StaticString, _ value: JSONValue) throws(JSONParseError) -> JSONValue {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw .malformed(offset: index) }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
            throw .malformed(offset: index + offset)
        }
        index += count
        return value
    }

    private mutating func array(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= Self.maximumDepth else { throw .tooDeep }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            elements.append(try value(depth: depth))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                return .array(elements)
            default: throw .malformed(offset: index)
            }
        }
    }

    private mutating func object(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= Self.maximumDepth else { throw .tooDeep }
        index += 1
        var fields: [String: JSONValue] = [:]
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            index += 1
            return .object(fields)
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw .malformed(offset: index) }
            let key = try string()
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw .malformed(offset: index) }
            index += 1
            // A repeated key: the last one counts (as most parsers do).
            fields[key] = try value(depth: depth)
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                return .object(fields)
            default: throw .malformed(offset: index)
            }
        }
    }

    private mutating func string() throws(JSONParseError) -> String {
        let start = index
        index += 1
        var text: [UInt8] = []
        while true {
            guard let byte = current else { throw .malformed(offset: start) }
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard let string = String(validating: text, as: UTF8.self) else { throw .malformed(offset: start) }
                return string
            case UInt8(ascii: "\\"):
                index += 1
                try escape(into: &text)
            case 0..<0x20:
                throw .malformed(offset: index)
            default:
                text.append(byte)
                index += 1
            }
        }
    }

    /// One escape after its backslash, appended as UTF-8.
    private mutating func escape(into text: inout [UInt8]) throws(JSONParseError) {
        guard let byte = current else { throw .malformed(offset: index) }
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): text.append(byte)
        case UInt8(ascii: "b"): text.append(0x08)
        case UInt8(ascii: "f"): text.append(0x0C)
        case UInt8(ascii: "n"): text.append(0x0A)
        case UInt8(ascii: "r"): text.append(0x0D)
        case UInt8(ascii: "t"): text.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try hex4()
            if (0xD800...0xDBFF).contains(scalar) {
                // A high surrogate must be followed by an escaped low one.
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                    throw .malformed(offset: index)
                }
                index += 2
                let low = try hex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw .malformed(offset: index) }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw .malformed(offset: index) }
            text.append(contentsOf: Array(String(Character(unicode)).utf8))
        default:
            throw .malformed(offset: index - 1)
        }
    }

    private mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw .malformed(offset: index) }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw .malformed(offset: index)
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    private mutating func number() throws(JSONParseError) -> JSONValue {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        guard let first = current, Self.isDigit(first) else { throw .malformed(offset: index) }
        if first == UInt8(ascii: "0") {
            index += 1
        } else {
            skipDigits()
        }
        var isInteger = true
        if current == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard let byte = current, Self.isDigit(byte) else { throw .malformed(offset: index) }
            skipDigits()
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard let byte = current, Self.isDigit(byte) else { throw .malformed(offset: index) }
            skipDigits()
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger, let integer = Int64(text) { return .int(integer) }
        if isInteger, let integer = UInt64(text) { return .uint(integer) }
        guard let double = Double(text), double.isFinite else { throw .malformed(offset: start) }
        return .double(double)
    }

    private mutating func skipDigits() {
        while let byte = current, Self.isDigit(byte) { index += 1 }
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }
}
