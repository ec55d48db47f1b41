import Foundation
import HaulTestSupport

#if canImport(Glibc)
    import Glibc
#endif

// A tiny blocking HTTP/1.1 client over a raw socket, shared by the FaultServer self-tests: it
// shows exactly what the server put on the wire (status, every header, body framing, closes).

private struct ClientError: Error, CustomStringConvertible {
    var description: String
}

struct TestResponse {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: [UInt8]
    /// True when the body ended as its framing said; false when the connection ended first.
    var isComplete: Bool

    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    var text: String { String(decoding: body, as: UTF8.self) }
}

final class TestClient {
    let fd: Int32
    private var buffer: [UInt8] = []

    init(port: Int, timeoutSeconds: Int = 5) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ClientError(description: "socket failed") }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            close(fd)
            throw ClientError(description: "connect failed: errno \(errno)")
        }
    }

    deinit { close(fd) }

    func send(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = []) {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        sendRaw(Array(head.utf8) + body)
    }

    func sendRaw(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { raw in
            var sent = 0
            while sent < raw.count {
                let n = Glibc.send(fd, raw.baseAddress.map { $0 + sent }, raw.count - sent, Int32(MSG_NOSIGNAL))
                if n <= 0 { return }
                sent += n
            }
        }
    }

    /// Reads more bytes into the buffer; false on EOF, error or timeout.
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 256 * 1024)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return false }
        buffer.append(contentsOf: chunk[0..<n])
        return true
    }

    private func take(_ count: Int) -> [UInt8] {
        let bytes = Array(buffer.prefix(count))
        buffer.removeFirst(min(count, buffer.count))
        return bytes
    }

    private func readLine() -> String? {
        while true {
            if let index = buffer.firstIndex(of: 10) {
                let line = take(index + 1)
                return String(decoding: line.dropLast().filter { $0 != 13 }, as: UTF8.self)
            }
            guard fill() else { return nil }
        }
    }

    /// Reads everything until the peer closes (or the timeout passes).
    func readToEnd() -> [UInt8] {
        while fill() {}
        return take(buffer.count)
    }

    /// True if the server closed the connection (EOF) within the receive timeout.
    func peerClosed() -> Bool {
        buffer.isEmpty && !fill()
    }

    func readResponse(forHead: Bool = false) throws -> TestResponse {
        var statusLine: String
        repeat {
            guard let line = readLine() else { throw ClientError(description: "no status line") }
            statusLine = line
        } while statusLine.isEmpty
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else {
            throw ClientError(description: "bad status line \(statusLine)")
        }
        var headers: [(name: String, value: String)] = []
        while let line = readLine(), !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers.append((String(line[..<colon]), value))
        }
        var response = TestResponse(status: status, headers: headers, body: [], isComplete: true)
        if status == 100 { return try readResponse(forHead: forHead) }
        if forHead || status == 204 || status == 304 { return response }
        if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            while true {
                guard let sizeLine = readLine(), let size = Int(sizeLine, radix: 16) else {
                    response.isComplete = false
                    return response
                }
                if size == 0 {
                    _ = readLine()
                    return response
                }
                while buffer.count < size + 2 {
                    guard fill() else {
                        response.body += take(buffer.count)
                        response.isComplete = false
                        return response
                    }
                }
                response.body += take(size)
                _ = take(2)
            }
        }
        if let lengthText = response.header("Content-Length"), let length = Int(lengthText) {
            response.body = readBody(length: length)
            response.isComplete = response.body.count == length
            return response
        }
        response.body = readToEnd()
        return response
    }

    /// Reads exactly `length` body bytes straight into one array (fast for large bodies).
    private func readBody(length: Int) -> [UInt8] {
        let buffered = take(min(length, buffer.count))
        var body = [UInt8](repeating: 0, count: length)
        var filled = buffered.count
        body.replaceSubrange(0..<filled, with: buffered)
        body.withUnsafeMutableBytes { raw in
            guard let base = raw.baseAddress else { return }
            while filled < length {
                let n = recv(fd, base + filled, length - filled, 0)
                if n <= 0 { return }
                filled += n
            }
        }
        return Array(body[0..<filled])
    }
}

/// One request on a fresh connection.
func fetch(
    _ server: FaultServer, _ path: String, method: String = "GET", headers: [(String, String)] = [],
    body: [UInt8] = []
) throws -> TestResponse {
    let client = try TestClient(port: server.port)
    client.send(method, path, headers: headers, body: body)
    return try client.readResponse(forHead: method == "HEAD")
}
