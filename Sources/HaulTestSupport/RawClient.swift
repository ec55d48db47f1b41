import Foundation
import HaulCore

#if canImport(Glibc)
    import Glibc
#endif

/// A raw TCP client of the server: it writes exactly the bytes a test gives it and reads with
/// deadlines, so a test can send what no well-behaved client would.
package final class RawClient {
    package let fd: Int32
    /// Received and not yet returned.
    private var pending: [UInt8] = []

    /// Connects to 127.0.0.1:`port`; `receiveBuffer` makes the socket's buffer that small (a
    /// client that stops reading then holds up the server's writes to it soon).
    package init(port: Int, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket() failed: errno \(errno)") }
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw TestSupportError("connect to port \(port) failed: errno \(errno)")
        }
    }

    deinit { close(fd) }

    package func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw TestSupportError("send failed: errno \(errno)") }
            offset += sent
        }
    }

    package func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Whatever arrives within `timeout` seconds (empty when nothing did); nil once the server
    /// closed (end of stream or reset) and nothing is pending.
    package func receive(timeout: Double) -> [UInt8]? {
        if !pending.isEmpty {
            defer { pending = [] }
            return pending
        }
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, Int32(timeout * 1000)) > 0 else { return [] }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = Glibc.read(fd, &buffer, buffer.count)
        return count > 0 ? Array(buffer[0..<count]) : nil
    }

    /// Reads until `wanted` can cut a piece off the bytes received (it returns the piece's
    /// length), within `timeout` seconds; the rest stays for the next read.
    package func read(timeout: Double, until wanted: ([UInt8]) -> Int?) throws -> [UInt8] {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        var bytes = pending
        pending = []
        while true {
            if let length = wanted(bytes) {
                pending = Array(bytes[length...])
                return Array(bytes[..<length])
            }
            let left = deadline - ContinuousClock.now
            guard left > .zero else {
                pending = bytes
                throw TestSupportError("timed out; got \(bytes.count) bytes: \(String(decoding: bytes, as: UTF8.self).prefix(300))")
            }
            guard let more = receive(timeout: left.inSeconds) else {
                throw TestSupportError("closed by the server; got \(String(decoding: bytes, as: UTF8.self).prefix(300))")
            }
            bytes += more
        }
    }

    /// True when the server closes the connection within `timeout` seconds (what it sends
    /// before that is dropped).
    package func closes(within timeout: Double) -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        pending = []
        while ContinuousClock.now < deadline {
            guard receive(timeout: 0.05) != nil else { return true }
        }
        return false
    }

    /// One HTTP response: status, fields (names lowercased) and a body of its Content-Length.
    package func response(timeout: Double = 5) throws -> (status: Int, headers: [String: String], body: String) {
        let head = try read(timeout: timeout) { bytes in Self.range(of: Array("\r\n\r\n".utf8), in: bytes).map { $0 + 4 } }
        let lines = String(decoding: head, as: UTF8.self).components(separatedBy: "\r\n")
        let status = Int(lines[0].split(separator: " ")[1]) ?? 0
        var headers: [String: String] = [:]
        for line in lines.dropFirst() where line.contains(":") {
            let parts = line.split(separator: ":", maxSplits: 1)
            headers[parts[0].lowercased()] = parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : ""
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        let body = try read(timeout: timeout) { $0.count >= length ? length : nil }
        return (status, headers, String(decoding: body, as: UTF8.self))
    }

    /// The opening handshake on /jsonrpc: true when answered 101 (the 101's head is consumed
    /// exactly; frames after it stay pending), else the status line.
    @discardableResult
    package func handshake(port: Int, origin: String? = nil) throws -> String {
        try send(
            "GET /jsonrpc HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n" + (origin.map { "Origin: \($0)\r\n" } ?? "") + "\r\n")
        let head = try read(timeout: 5) { bytes in Self.range(of: Array("\r\n\r\n".utf8), in: bytes).map { $0 + 4 } }
        return String(decoding: head, as: UTF8.self).components(separatedBy: "\r\n")[0]
    }

    /// One masked client frame.
    package func sendFrame(_ opcode: UInt8, _ payload: [UInt8]) throws {
        try send(Self.frame(opcode, payload))
    }

    package func sendText(_ text: String) throws { try sendFrame(1, Array(text.utf8)) }

    /// The next server frame (unmasked, final): its opcode and payload.
    package func frame(timeout: Double = 5) throws -> (opcode: UInt8, payload: [UInt8]) {
        let bytes = try read(timeout: timeout) { bytes in
            guard bytes.count >= 2 else { return nil }
            var length = Int(bytes[1] & 0x7F)
            var header = 2
            if length == 126 {
                guard bytes.count >= 4 else { return nil }
                length = Int(bytes[2]) << 8 | Int(bytes[3])
                header = 4
            } else if length == 127 {
                guard bytes.count >= 10 else { return nil }
                length = (2..<10).reduce(0) { $0 << 8 | Int(bytes[$1]) }
                header = 10
            }
            return bytes.count >= header + length ? header + length : nil
        }
        let header = bytes[1] & 0x7F == 126 ? 4 : bytes[1] & 0x7F == 127 ? 10 : 2
        return (bytes[0] & 0x0F, Array(bytes[header...]))
    }

    /// The next text frame as a string, or nil when none comes within `timeout` seconds.
    package func text(timeout: Double) -> String? {
        guard let frame = try? frame(timeout: timeout), frame.opcode == 1 else { return nil }
        return String(decoding: frame.payload, as: UTF8.self)
    }

    package static func range(of needle: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        return (0...(bytes.count - needle.count)).first { bytes[$0..<($0 + needle.count)].elementsEqual(needle) }
    }

    /// The mask of every client frame made here.
    package static let mask: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]

    /// A client frame: masked, its length in the shortest form (or `longForm` to force 64 bits).
    package static func frame(_ opcode: UInt8, _ payload: [UInt8], final: Bool = true, masked: Bool = true, longForm: Bool = false) -> [UInt8] {
        let header = frameHeader(opcode, length: UInt64(payload.count), final: final, masked: masked, longForm: longForm)
        guard masked else { return header + payload }
        return header + payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
    }

    /// A client frame's header (with its mask when `masked`) announcing `length` payload bytes:
    /// what a test sends to claim a payload it never sends.
    package static func frameHeader(_ opcode: UInt8, length: UInt64, final: Bool = true, masked: Bool = true, longForm: Bool = false) -> [UInt8] {
        var bytes: [UInt8] = [(final ? 0x80 : 0) | opcode]
        let maskBit: UInt8 = masked ? 0x80 : 0
        if length <= 125, !longForm {
            bytes.append(maskBit | UInt8(length))
        } else if length <= 0xFFFF, !longForm {
            bytes += [maskBit | 126, UInt8(length >> 8), UInt8(length & 0xFF)]
        } else {
            bytes.append(maskBit | 127)
            bytes += (0..<8).reversed().map { UInt8(truncatingIfNeeded: length >> UInt64($0 * 8)) }
        }
        return masked ? bytes + mask : bytes
    }
}
