import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A WebSocket client on a plain TCP socket, for tests that must send what a well-behaved client
/// library would not (a frame header without its payload, a message of any size) and read the
/// server's frames as they are.
public final class RawWebSocket {
    public let fd: Int32

    /// Connects to 127.0.0.1:`port` and completes the handshake on `path`.
    public init(port: Int, path: String = "/jsonrpc", receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket() failed") }
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw TestSupportError("connect to port \(port) failed")
        }
        try send(
            Array(
                ("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8))
        var head: [UInt8] = []
        while !head.ends(with: Array("\r\n\r\n".utf8)) {
            var byte: UInt8 = 0
            guard read(fd, &byte, 1) == 1 else { break }
            head.append(byte)
        }
        guard String(decoding: head, as: UTF8.self).hasPrefix("HTTP/1.1 101") else {
            close(fd)
            throw TestSupportError("no WebSocket handshake: \(String(decoding: head, as: UTF8.self))")
        }
    }

    deinit { close(fd) }

    /// Writes every byte (throws when the server closed the connection).
    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw TestSupportError("write failed (errno \(errno))") }
            offset += sent
        }
    }

    /// The header of a masked client frame announcing `length` payload bytes.
    public static func frameHeader(opcode: UInt8 = 1, length: UInt64, final: Bool = true, mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]) -> [UInt8] {
        var header: [UInt8] = [(final ? 0x80 : 0) | opcode]
        if length < 126 {
            header.append(0x80 | UInt8(length))
        } else if length <= 0xFFFF {
            header += [0x80 | 126, UInt8(length >> 8), UInt8(length & 0xFF)]
        } else {
            header.append(0x80 | 127)
            for shift in stride(from: 56, through: 0, by: -8) { header.append(UInt8((length >> UInt64(shift)) & 0xFF)) }
        }
        return header + mask
    }

    /// One masked text message.
    public func sendText(_ text: String) throws {
        let payload = Array(text.utf8)
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        try send(Self.frameHeader(length: UInt64(payload.count), mask: mask) + payload.enumerated().map { $0.element ^ mask[$0.offset % 4] })
    }

    /// The next frame from the server (opcode and payload), or nil when the connection ended.
    public func readFrame() -> (opcode: UInt8, payload: [UInt8])? {
        guard let head = readExactly(2) else { return nil }
        var length = UInt64(head[1] & 0x7F)
        if length == 126 {
            guard let extended = readExactly(2) else { return nil }
            length = UInt64(extended[0]) << 8 | UInt64(extended[1])
        } else if length == 127 {
            guard let extended = readExactly(8) else { return nil }
            length = extended.reduce(0) { $0 << 8 | UInt64($1) }
        }
        guard length < 64 << 20, let payload = readExactly(Int(length)) else { return nil }
        return (head[0] & 0x0F, payload)
    }

    /// The next text message's text, skipping other frames; nil when the connection ended.
    public func readText() -> String? {
        while let frame = readFrame() {
            if frame.opcode == 1 { return String(decoding: frame.payload, as: UTF8.self) }
            if frame.opcode == 8 { return nil }
        }
        return nil
    }

    private func readExactly(_ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = bytes[got...].withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { return nil }
            got += n
        }
        return bytes
    }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}
