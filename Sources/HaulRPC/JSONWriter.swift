/// Compact JSON text of a `JSONValue`: keys sorted (stable output), `/` unescaped, control
/// characters as `\u00XX`. Values come from `JSONParser` or from Haul's own replies, both bounded
/// in depth, so the recursion is bounded too.
struct JSONWriter {
    private(set) var bytes: [UInt8] = []

    mutating func write(_ value: JSONValue) {
        switch value {
        case .null: append("null")
        case .bool(let flag): append(flag ? "true" : "false")
        case .int(let number): append(String(number))
        case .double(let number):
            // JSON has no NaN or infinity; Haul never produces them, but a value built by hand might.
            guard number.isFinite else { return append("null") }
            if number == number.rounded(), abs(number) < 1e15 {
                append(String(Int64(number)))
            } else {
                append("\(number)")
            }
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

    private mutating func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    private mutating func write(string: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): append("\\\"")
            case UInt8(ascii: "\\"): append("\\\\")
            case 0x0A: append("\\n")
            case 0x0D: append("\\r")
            case 0x09: append("\\t")
            case 0..<0x20:
                let hex = String(byte, radix: 16)
                append("\\u00" + (hex.count == 1 ? "0" + hex : hex))
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
