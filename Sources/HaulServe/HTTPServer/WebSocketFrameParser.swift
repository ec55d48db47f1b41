import Foundation

/// What a client's frames amount to, one event at a time.
enum WebSocketEvent: Sendable, Equatable {
    /// A whole message (its fragments joined).
    case message(Data, isText: Bool)
    /// A ping: answer with a pong carrying `payload`.
    case ping(Data)
    case pong
    /// The client closes, with its status code if it gave one: echo it and close.
    case close(code: UInt16?)
}

/// Why the server closes a WebSocket: the status code of its close frame and a reason.
struct WebSocketFailure: Error, Sendable, Equatable {
    let code: UInt16
    let reason: String

    static func protocolError(_ reason: String) -> WebSocketFailure { WebSocketFailure(code: 1002, reason: reason) }
}

/// Reads client frames (RFC 6455 section 5) out of the bytes received so far and joins fragmented
/// messages. A frame or message longer than `limit` is refused from its header alone, before any
/// of its payload is read, so a client cannot make the server buffer more than `limit` bytes; a
/// message in more than `fragments` frames is refused too, so a client cannot make the server
/// parse a million frames for one message. Each frame costs time in proportion to its own
/// length: fragments are appended in place, never copied again.
/// Pure: the connection hands it its unread input and consumes what it used.
struct WebSocketFrameParser: Sendable {
    /// The outcome of one look at the input.
    enum Step: Sendable, Equatable {
        /// Not a whole frame yet (and within the limit): read more.
        case needMore
        /// A frame of `consumed` bytes was read; it completed `event` (nil for a fragment kept).
        case frame(consumed: Int, event: WebSocketEvent?)
        /// Send a close frame with this code and close the connection.
        case failed(WebSocketFailure)
    }

    /// The largest message, in bytes, whole or fragmented.
    let limit: Int
    /// The most frames one message may come in.
    let fragments: Int
    /// A fragmented message so far: whether it is text, its payload, and how many frames it came in.
    private var pending: (isText: Bool, frames: Int)?
    private var pendingPayload = Data()

    /// A parser of messages up to `limit` bytes in up to `fragments` frames (1,024 by default:
    /// clients that fragment send a large message in large pieces).
    init(limit: Int, fragments: Int = 1024) {
        self.limit = limit
        self.fragments = max(1, fragments)
    }

    /// Some fragments of a message were read, not its last.
    var isMidMessage: Bool { pending != nil }

    /// Reads the frame at the start of `bytes`.
    mutating func next(_ bytes: ArraySlice<UInt8>) -> Step {
        let base = bytes.startIndex
        guard bytes.count >= 2 else { return .needMore }
        let first = bytes[base]
        let second = bytes[base + 1]
        let isFinal = first & 0x80 != 0
        let opcode = first & 0x0F
        guard first & 0x70 == 0 else { return .failed(.protocolError("reserved bits set (no extension was agreed)")) }
        switch opcode {
        case 0, 1, 2, 8, 9, 10: break
        default: return .failed(.protocolError("reserved opcode \(opcode)"))
        }
        guard second & 0x80 != 0 else { return .failed(.protocolError("client frames must be masked")) }
        let isControl = opcode >= 8
        if isControl {
            guard isFinal, second & 0x7F <= 125 else { return .failed(.protocolError("control frames are final and at most 125 bytes")) }
        } else if opcode == 0 {
            guard let pending else { return .failed(.protocolError("a continuation frame with no message to continue")) }
            guard pending.frames < fragments else { return .failed(WebSocketFailure(code: 1009, reason: "message in over \(fragments) fragments")) }
        } else if pending != nil {
            return .failed(.protocolError("a new message before the fragmented one ended"))
        }
        var headerLength = 2
        var length: UInt64 = UInt64(second & 0x7F)
        if length == 126 {
            guard bytes.count >= 4 else { return .needMore }
            length = UInt64(bytes[base + 2]) << 8 | UInt64(bytes[base + 3])
            headerLength = 4
        } else if length == 127 {
            guard bytes.count >= 10 else { return .needMore }
            length = (0..<8).reduce(UInt64(0)) { $0 << 8 | UInt64(bytes[base + 2 + $1]) }
            guard length >> 63 == 0 else { return .failed(.protocolError("a 64-bit length with its top bit set")) }
            headerLength = 10
        }
        let sofar = UInt64(pending == nil ? 0 : pendingPayload.count)
        guard isControl || length <= UInt64(limit) - min(sofar, UInt64(limit)) else {
            return .failed(WebSocketFailure(code: 1009, reason: "message over \(limit) bytes"))
        }
        let payloadLength = Int(length)
        headerLength += 4
        guard bytes.count >= headerLength + payloadLength else { return .needMore }
        let maskStart = base + headerLength - 4
        let mask = (bytes[maskStart], bytes[maskStart + 1], bytes[maskStart + 2], bytes[maskStart + 3])
        let payloadStart = base + headerLength
        let consumed = headerLength + payloadLength
        if !isControl {
            if pending == nil {
                pending = (isText: opcode == 1, frames: 0)
                pendingPayload.removeAll(keepingCapacity: true)
            }
            pending?.frames += 1
            Self.unmask(bytes[payloadStart..<(payloadStart + payloadLength)], mask, into: &pendingPayload)
            return isFinal ? finishMessage(consumed: consumed) : .frame(consumed: consumed, event: nil)
        }
        var payload = Data()
        Self.unmask(bytes[payloadStart..<(payloadStart + payloadLength)], mask, into: &payload)
        switch opcode {
        case 8: return close(payload, consumed: consumed)
        case 9: return .frame(consumed: consumed, event: .ping(payload))
        default: return .frame(consumed: consumed, event: .pong)
        }
    }

    /// Appends `masked` to `payload`, unmasked.
    private static func unmask(_ masked: ArraySlice<UInt8>, _ mask: (UInt8, UInt8, UInt8, UInt8), into payload: inout Data) {
        guard !masked.isEmpty else { return }
        let keys = [mask.0, mask.1, mask.2, mask.3]
        let start = payload.count
        payload.count += masked.count
        payload.withUnsafeMutableBytes { (raw: UnsafeMutableRawBufferPointer) in
            for (offset, byte) in masked.enumerated() { raw[start + offset] = byte ^ keys[offset & 3] }
        }
    }

    /// The message whose last frame was just read.
    private mutating func finishMessage(consumed: Int) -> Step {
        let isText = pending?.isText ?? true
        let payload = pendingPayload
        pending = nil
        pendingPayload = Data()
        if isText, String(validating: payload, as: UTF8.self) == nil {
            return .failed(WebSocketFailure(code: 1007, reason: "a text message that is not UTF-8"))
        }
        return .frame(consumed: consumed, event: .message(payload, isText: isText))
    }

    private func close(_ payload: Data, consumed: Int) -> Step {
        guard !payload.isEmpty else { return .frame(consumed: consumed, event: .close(code: nil)) }
        guard payload.count >= 2 else { return .failed(.protocolError("a close frame of one byte")) }
        let code = UInt16(payload[payload.startIndex]) << 8 | UInt16(payload[payload.startIndex + 1])
        guard Self.isValidCloseCode(code) else { return .failed(.protocolError("close code \(code) is not one a peer may send")) }
        guard String(validating: payload.dropFirst(2), as: UTF8.self) != nil else {
            return .failed(WebSocketFailure(code: 1007, reason: "a close reason that is not UTF-8"))
        }
        return .frame(consumed: consumed, event: .close(code: code))
    }

    /// The codes a close frame may carry (RFC 6455 section 7.4, and the registry's 1012-1014).
    static func isValidCloseCode(_ code: UInt16) -> Bool {
        switch code {
        case 1000...1003, 1007...1014, 3000...4999: return true
        default: return false
        }
    }
}
