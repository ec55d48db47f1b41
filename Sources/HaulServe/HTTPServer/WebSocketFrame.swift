import Foundation

/// Server frames (RFC 6455 section 5.2): final, unmasked (only clients mask).
enum WebSocketFrame {
    static func text(_ payload: Data) -> Data { encode(opcode: 1, payload) }

    static func pong(_ payload: Data) -> Data { encode(opcode: 10, payload) }

    static func ping(_ payload: Data) -> Data { encode(opcode: 9, payload) }

    /// A close frame with `code` (none when nil) and a reason cut to fit a control frame.
    static func close(code: UInt16?, reason: String = "") -> Data {
        guard let code else { return encode(opcode: 8, Data()) }
        var payload = Data([UInt8(code >> 8), UInt8(code & 0xFF)])
        payload.append(contentsOf: Array(reason.utf8.prefix(123)))
        return encode(opcode: 8, payload)
    }

    /// One final frame with `opcode` and `payload`, its length in the shortest form.
    static func encode(opcode: UInt8, _ payload: Data) -> Data {
        var frame = Data([0x80 | opcode])
        switch payload.count {
        case 0...125:
            frame.append(UInt8(payload.count))
        case 126...0xFFFF:
            frame.append(126)
            frame.append(contentsOf: [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)])
        default:
            frame.append(127)
            frame.append(contentsOf: (0..<8).reversed().map { UInt8(truncatingIfNeeded: UInt64(payload.count) >> UInt64($0 * 8)) })
        }
        frame.append(payload)
        return frame
    }
}
