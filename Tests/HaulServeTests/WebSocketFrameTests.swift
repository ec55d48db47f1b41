import Foundation
import HaulTestSupport
import Testing

@testable import HaulServe

/// SHA-1, the handshake and the frames of RFC 6455, without a socket.
@Suite("HTTP server: WebSocket handshake and frames (pure)")
struct WebSocketFrameTests {
    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test(arguments: [
        ("", "da39a3ee5e6b4b0d3255bfef95601890afd80709"),
        ("abc", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "84983e441c3bd26ebaae4aa1f95129e5e54670f1"),
        (
            "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
            "a49b2446a02c645bf419f995b67091253a04a259"
        ),
    ])
    func sha1MatchesTheFIPSVectors(message: String, digest: String) {
        #expect(Self.hex(SHA1.digest(Array(message.utf8))) == digest)
    }

    @Test func sha1OfAMillionAs() {
        #expect(Self.hex(SHA1.digest([UInt8](repeating: 0x61, count: 1_000_000))) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
    }

    @Test func theAcceptValueIsTheRFCsExample() {
        #expect(WebSocketHandshake.acceptValue(for: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        let response = String(decoding: WebSocketHandshake.response(for: "dGhlIHNhbXBsZSBub25jZQ=="), as: UTF8.self)
        #expect(response.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n") && response.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"))
    }

    @Test func theHandshakeNeedsGETUpgradeVersion13AndAKey() throws {
        let valid =
            "GET /jsonrpc HTTP/1.1\r\nHost: x\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\nSec-WebSocket-Version: 13\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
        func check(_ text: String) throws -> Result<String, HTTPRefusal> { WebSocketHandshake.check(try HTTPParserTests.head(text)) }
        #expect(try check(valid) == .success("dGhlIHNhbXBsZSBub25jZQ=="))
        #expect(try WebSocketHandshake.isRequested(by: HTTPParserTests.head(valid)))
        func status(_ text: String) throws -> Int? {
            if case .failure(let refusal) = try check(text) { return refusal.status }
            return nil
        }
        #expect(try status(valid.replacingOccurrences(of: "GET", with: "POST")) == 400)
        #expect(try status(valid.replacingOccurrences(of: "keep-alive, Upgrade", with: "keep-alive")) == 400)
        #expect(try status(valid.replacingOccurrences(of: "Version: 13", with: "Version: 8")) == 426)
        #expect(try status(valid.replacingOccurrences(of: "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n", with: "")) == 400)
        #expect(try status(valid.replacingOccurrences(of: "dGhlIHNhbXBsZSBub25jZQ==", with: "c2hvcnQ=")) == 400)
        #expect(WebSocketHandshake.refusalResponse(HTTPRefusal(426, "v")).headers.contains(HTTPHeader(name: "Sec-WebSocket-Version", value: "13")))
    }

    @Test func theRFCsMaskedHelloIsOneTextMessage() {
        var parser = WebSocketFrameParser(limit: 1 << 20)
        let bytes: [UInt8] = [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
        // Every prefix is not yet a frame
        for cut in 0..<bytes.count { #expect(parser.next(ArraySlice(bytes[0..<cut])) == .needMore, "cut at \(cut)") }
        #expect(parser.next(ArraySlice(bytes + [0x81])) == .frame(consumed: 11, event: .message(Data("Hello".utf8), isText: true)))
    }

    @Test(arguments: [0, 125, 126, 65535, 65536])
    func everyLengthFormIsRead(length: Int) {
        let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0) }
        for longForm in [false, true] {
            var parser = WebSocketFrameParser(limit: 1 << 20)
            let bytes = RawClient.frame(2, payload, longForm: longForm)
            #expect(parser.next(ArraySlice(bytes.dropLast())) == .needMore)
            #expect(parser.next(ArraySlice(bytes)) == .frame(consumed: bytes.count, event: .message(Data(payload), isText: false)))
        }
    }

    @Test func aFrameOverTheLimitIsRefusedFromItsHeaderAlone() {
        // GIVEN only the 14-byte header of a frame announcing 64 MiB (no payload at all)
        let header =
            Array(RawClient.frame(1, [], longForm: true).prefix(2)) + (0..<8).reversed().map { UInt8(truncatingIfNeeded: UInt64(64 << 20) >> UInt64($0 * 8)) }
        var parser = WebSocketFrameParser(limit: 1 << 20)
        // THEN it is refused with 1009 at once, before the mask, let alone the payload
        guard case .failed(let failure) = parser.next(ArraySlice(header)) else {
            Issue.record("not refused")
            return
        }
        #expect(failure.code == 1009)
        // AND a frame of exactly the limit is fine
        var exact = WebSocketFrameParser(limit: 200)
        #expect(
            exact.next(ArraySlice(RawClient.frame(1, [UInt8](repeating: 0x41, count: 200))))
                != .failed(WebSocketFailure(code: 1009, reason: "message over 200 bytes")))
        var over = WebSocketFrameParser(limit: 200)
        #expect(
            over.next(ArraySlice(RawClient.frame(1, [UInt8](repeating: 0x41, count: 201)).prefix(4)))
                == .failed(WebSocketFailure(code: 1009, reason: "message over 200 bytes")))
    }

    @Test func fragmentsAreJoinedAroundControlFramesAndTheirSumIsLimited() {
        var parser = WebSocketFrameParser(limit: 10)
        let first = RawClient.frame(1, Array("Hel".utf8), final: false)
        #expect(parser.next(ArraySlice(first)) == .frame(consumed: first.count, event: nil))
        let ping = RawClient.frame(9, Array("p".utf8))
        #expect(parser.next(ArraySlice(ping)) == .frame(consumed: ping.count, event: .ping(Data("p".utf8))))
        let last = RawClient.frame(0, Array("lo".utf8))
        #expect(parser.next(ArraySlice(last)) == .frame(consumed: last.count, event: .message(Data("Hello".utf8), isText: true)))
        // A fragmented message over the limit is refused at the header that passes it
        _ = parser.next(ArraySlice(RawClient.frame(2, [UInt8](repeating: 1, count: 6), final: false)))
        guard case .failed(let failure) = parser.next(ArraySlice(RawClient.frame(0, [UInt8](repeating: 1, count: 5)).prefix(2))) else {
            Issue.record("not refused")
            return
        }
        #expect(failure.code == 1009)
    }

    @Test func protocolErrorsAre1002() {
        func code(_ frames: [[UInt8]]) -> UInt16? {
            var parser = WebSocketFrameParser(limit: 1 << 20)
            for bytes in frames {
                if case .failed(let failure) = parser.next(ArraySlice(bytes)) { return failure.code }
            }
            return nil
        }
        #expect(code([RawClient.frame(1, Array("x".utf8), masked: false)]) == 1002)
        #expect(code([[0xC1] + RawClient.frame(1, Array("x".utf8)).dropFirst()]) == 1002)  // RSV1
        #expect(code([RawClient.frame(3, [])]) == 1002)  // reserved data opcode
        #expect(code([RawClient.frame(0xB, [])]) == 1002)  // reserved control opcode
        #expect(code([RawClient.frame(0, Array("x".utf8))]) == 1002)  // continuation of nothing
        #expect(code([RawClient.frame(1, Array("a".utf8), final: false), RawClient.frame(1, Array("b".utf8))]) == 1002)  // new message mid-message
        #expect(code([RawClient.frame(9, [], final: false)]) == 1002)  // fragmented control frame
        #expect(code([RawClient.frame(9, [UInt8](repeating: 0, count: 126))]) == 1002)  // control frame over 125
        #expect(code([RawClient.frame(8, [0x03])]) == 1002)  // close frame of one byte
        #expect(code([RawClient.frame(8, [0x03, 0xED])]) == 1002)  // 1005 may not be sent
        #expect(code([RawClient.frame(1, [0xFF, 0xFE])]) == 1007)  // text that is not UTF-8
        #expect(code([[0x81, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0]]) == 1002)  // 64-bit length with the top bit set
    }

    @Test func closeAndPongFramesAreEvents() {
        var parser = WebSocketFrameParser(limit: 1 << 20)
        let close = RawClient.frame(8, [0x03, 0xE8] + Array("bye".utf8))
        #expect(parser.next(ArraySlice(close)) == .frame(consumed: close.count, event: .close(code: 1000)))
        #expect(parser.next(ArraySlice(RawClient.frame(8, []))) == .frame(consumed: 6, event: .close(code: nil)))
        #expect(parser.next(ArraySlice(RawClient.frame(10, [1, 2]))) == .frame(consumed: 8, event: .pong))
    }

    @Test func serverFramesAreUnmaskedInTheShortestLengthForm() {
        #expect(Array(WebSocketFrame.text(Data("Hello".utf8))) == [0x81, 0x05] + Array("Hello".utf8))
        let medium = WebSocketFrame.text(Data(count: 300))
        #expect(Array(medium.prefix(4)) == [0x81, 126, 0x01, 0x2C] && medium.count == 304)
        let large = WebSocketFrame.text(Data(count: 70_000))
        #expect(Array(large.prefix(10)) == [0x81, 127, 0, 0, 0, 0, 0, 0x01, 0x11, 0x70] && large.count == 70_010)
        #expect(Array(WebSocketFrame.close(code: 1009, reason: "big")) == [0x88, 5, 0x03, 0xF1] + Array("big".utf8))
        #expect(Array(WebSocketFrame.close(code: nil)) == [0x88, 0])
        #expect(Array(WebSocketFrame.pong(Data([7]))) == [0x8A, 1, 7])
    }

    @Test func outputIsSentAcrossPartialWritesAndCountedInMessages() {
        var output = OutputQueue()
        output.append(Data("abc".utf8))
        output.append(Data("defg".utf8))
        #expect(output.messages == 2 && output.bytes == 7)
        var sent: [UInt8] = []
        // A socket that takes 2 bytes, then is full
        var room = 2
        let first = output.flush { bytes in
            let count = min(room, bytes.count)
            room -= count
            sent += bytes.prefix(count)
            return count
        }
        #expect(first == .sent(2) && output.bytes == 5 && output.messages == 2)
        #expect(
            output.flush { bytes in
                sent += bytes
                return bytes.count
            } == .sent(5))
        #expect(sent == Array("abcdefg".utf8) && output.isEmpty && output.messages == 0)
        output.append(Data("x".utf8))
        #expect(output.flush { _ in -1 } == .failed)
    }

    @Test func inputIsConsumedAndTakenInOrder() {
        var input = InputBuffer()
        Array("hello world".utf8).withUnsafeBytes { input.append($0) }
        #expect(input.take(6) == Data("hello ".utf8))
        #expect(Array(input.readable) == Array("world".utf8))
        input.consume(5)
        #expect(input.isEmpty)
    }
}
