/// Compact JSON text of a `JSONValue`, Haul's one set of rules for writing JSON:
///
/// - object keys sorted (byte order for ASCII keys), so the output is stable;
/// - strings as UTF-8 (non-ASCII and non-BMP characters as they are), `"` and `\` escaped, `/`
///   not; backspace, form feed, line feed, carriage return and tab as `\b`, `\f`, `\n`, `\r`,
///   `\t`, other control characters as `\u00XX` (lower-case hex);
/// - a number as the shortest text that reads back as the same value (Swift's `description`),
///   without a `.0` for a whole one; NaN and infinity, which JSON cannot hold, as `null`.
///
/// These are `JSONSerialization`'s rules with `.withoutEscapingSlashes`, and `JSONEncoder`'s but
/// for `/`. Values come from `JSONParser` (bounded in depth) or from Haul's own types, so the
/// recursion is bounded too.
package struct JSONWriter {
    package private(set) var bytes: [UInt8] = []

    package init() {}

    package mutating func write(_ value: JSONValue) {
        switch value {
        case .null: append("null")
        case .bool(let flag): append(flag ? "true" : "false")
        case .int(let number): append(String(number))
        case .uint(let number): append(String(number))
        case .double(let number): append(Self.number(number))
        case .string(let text): write(string: text)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { bytes.append(UInt8(ascii: ",")) }
                write(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let fields):
            bytes.append(UInt8(ascii: "{"))
            for (offset, key) in fields.keys.sorted().enumerated() {
                if offset > 0 { bytes.append(UInt8(ascii: ",")) }
                write(string: key)
                bytes.append(UInt8(ascii: ":"))
                if let field = fields[key] { write(field) }
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// `text` as a JSON string literal, quotes included.
    package static func quoted(_ text: String) -> String {
        var writer = JSONWriter()
        writer.write(string: text)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// A number's JSON text: `null` when it is not finite (JSON has no NaN or infinity).
    static func number(_ number: Double) -> String {
        guard number.isFinite else { return "null" }
        var text = number.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        return text
    }

    private mutating func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    mutating func append(byte: UInt8) {
        bytes.append(byte)
    }

    private static let hex = Array("0123456789abcdef".utf8)

    mutating func write(string: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = string
        // Runs of bytes that need no escape go in at once (most strings are all such bytes).
        text.withUTF8 { utf8 in
            var start = 0
            for (index, byte) in utf8.enumerated() where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                if start < index { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index])) }
                escape(byte)
                start = index + 1
            }
            if start < utf8.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...])) }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func escape(_ byte: UInt8) {
        bytes.append(UInt8(ascii: "\\"))
        switch byte {
        case 0x08: bytes.append(UInt8(ascii: "b"))
        case 0x0C: bytes.append(UInt8(ascii: "f"))
        case 0x0A: bytes.append(UInt8(ascii: "n"))
        case 0x0D: bytes.append(UInt8(ascii: "r"))
        case 0x09: bytes.append(UInt8(ascii: "t"))
        case 0..<0x20:
            bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), Self.hex[Int(byte >> 4)], Self.hex[Int(byte & 0xF)]])
        default: bytes.append(byte)  // '"' and '\\'
        }
    }
}
