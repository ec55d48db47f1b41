// fuzz-sources: Sources/HaulServe/HTTPServer/WebSocketFrameParser.swift
// A client's WebSocket bytes, the second code of `haul serve` to meet them: either raw bytes or
// frames built from the input (masked or not, any opcode, fragmented or final, each length form,
// lengths that lie), under an arbitrary message limit, read by `WebSocketFrameParser` all at
// once, in arbitrary chunks, and byte by byte, as a connection reads them (it asks again after
// every read and drops what a frame consumed).
// Checks: nothing traps; a frame consumes at least one byte and no more than the input holds;
// no message is longer than the limit, no ping payload longer than 125 bytes, no text message
// other than UTF-8; and the three ways of feeding give the same events and the same end.

import Foundation

/// What feeding a parser produced: its events, and how it ended (nil: waiting for more).
private struct Run: Equatable {
    var events: [WebSocketEvent] = []
    var failure: WebSocketFailure?
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let limit = Int(input.int64(in: 0...4096))
    let chunkSeed = Int(input.byte())
    let stream = input.bool() ? input.remainingBytes : frames(&input)

    let whole = feed(stream, limit: limit) { _ in stream.count }
    let chunked = feed(stream, limit: limit) { step in 1 + (chunkSeed &* (step + 1)) % 61 }
    let single = feed(stream, limit: limit) { _ in 1 }
    require(whole == chunked, "all at once \(whole), in chunks \(chunked)")
    require(whole == single, "all at once \(whole), byte by byte \(single)")
    return 0
}

/// Feeds `stream` to a fresh parser `chunk(step)` bytes at a time, reading every frame the held
/// bytes allow after each read; stops at a failure.
private func feed(_ stream: [UInt8], limit: Int, chunk: (Int) -> Int) -> Run {
    var parser = WebSocketFrameParser(limit: limit)
    var run = Run()
    var held: [UInt8] = []
    var offset = 0
    var step = 0
    while offset < stream.count {
        let count = min(stream.count - offset, max(1, chunk(step)))
        held += stream[offset..<(offset + count)]
        offset += count
        step += 1
        reading: while true {
            switch parser.next(held[...]) {
            case .needMore:
                break reading
            case .failed(let failure):
                run.failure = failure
                return run
            case .frame(let consumed, let event):
                require(consumed >= 1 && consumed <= held.count, "a frame of \(consumed) bytes in \(held.count)")
                held.removeFirst(consumed)
                guard let event else { continue }
                switch event {
                case .message(let payload, let isText):
                    require(payload.count <= limit, "a message of \(payload.count) bytes, limit \(limit)")
                    require(!isText || String(validating: payload, as: UTF8.self) != nil, "a text message that is not UTF-8")
                case .ping(let payload):
                    require(payload.count <= 125, "a ping of \(payload.count) bytes")
                case .pong, .close:
                    break
                }
                run.events.append(event)
            }
        }
    }
    return run
}

/// Frames built from the input: usually well-formed client frames, each with one thing that may
/// be off.
private func frames(_ input: inout FuzzInput) -> [UInt8] {
    var stream: [UInt8] = []
    while !input.isExhausted, stream.count < 8192 {
        let flags = input.byte()
        let opcode = input.pick([0, 1, 2, 8, 9, 10, 0, 1, 3, 11]) as UInt8
        let isFinal = flags & 1 == 0
        let masked = flags & 2 == 0
        var payload: [UInt8]
        switch input.byte() % 4 {
        case 0: payload = Array(input.string(maxBytes: 200).utf8)
        case 1: payload = Array(repeating: input.byte(), count: Int(input.byte()) * Int(input.byte() % 5))
        case 2: payload = opcode == 8 ? [0x03, 0xE8] + Array("bye".utf8) : Array("{\"jsonrpc\":\"2.0\"}".utf8)
        default: payload = []
        }
        var header: [UInt8] = [(isFinal ? 0x80 : 0) | (flags & 4 == 0 ? 0 : 0x40) | opcode]
        let maskBit: UInt8 = masked ? 0x80 : 0
        // The length in the form the input picks (the shortest, a longer one, or a lie).
        let stated = flags & 8 == 0 ? UInt64(payload.count) : UInt64(input.int64(in: 0...Int64.max))
        let form = flags >> 4 & 3
        if form == 0, stated <= 125 {
            header.append(maskBit | UInt8(stated))
        } else if form <= 1, stated <= 0xFFFF {
            header += [maskBit | 126, UInt8(stated >> 8 & 0xFF), UInt8(stated & 0xFF)]
        } else {
            header += [maskBit | 127] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: stated >> UInt64($0 * 8)) }
        }
        let mask = [input.byte(), input.byte(), input.byte(), input.byte()]
        if masked { header += mask }
        stream += header + payload.enumerated().map { masked ? $0.element ^ mask[$0.offset & 3] : $0.element }
    }
    return stream
}
