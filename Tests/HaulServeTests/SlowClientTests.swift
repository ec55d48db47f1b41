import Foundation
import Haul
import HaulTestSupport
import Testing

@testable import HaulServe

#if canImport(Glibc)
    import Glibc
#endif

/// A WebSocket client that stops reading holds up nothing but itself.
@Suite("haul serve: a slow WebSocket client")
struct SlowClientTests {
    /// A raw WebSocket client on a TCP socket: handshake, one masked text frame, then it reads nothing.
    final class StalledClient {
        let fd: Int32

        init(port: Int) throws {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else { throw TestSupportError("connect failed") }
            // A small receive buffer, so the server's writes to it block soon.
            var small: Int32 = 4096
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
            try send(
                Array(
                    ("GET /jsonrpc HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8))
            var head = [UInt8](repeating: 0, count: 1024)
            let got = read(fd, &head, head.count)
            guard got > 12, String(decoding: head[0..<got], as: UTF8.self).hasPrefix("HTTP/1.1 101") else {
                throw TestSupportError("no WebSocket handshake: \(String(decoding: head[0..<max(0, got)], as: UTF8.self))")
            }
        }

        deinit { close(fd) }

        /// Goes away: the server's write to it fails at once instead of waiting for its timeout.
        func hangUp() {
            shutdown(fd, Int32(SHUT_RDWR))
        }

        func send(_ bytes: [UInt8]) throws {
            var offset = 0
            while offset < bytes.count {
                let sent = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                guard sent > 0 else { throw TestSupportError("write failed") }
                offset += sent
            }
        }

        /// One masked text frame (clients must mask), shorter than 126 bytes.
        func sendText(_ text: String) throws {
            let payload = Array(text.utf8)
            let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
            try send([0x81, 0x80 | UInt8(payload.count)] + mask + payload.enumerated().map { $0.element ^ mask[$0.offset % 4] })
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func notificationsToAClientThatDoesNotReadNeverBlockTheSender() throws {
        let directory = try TemporaryDirectory(prefix: "haul-slow-client")
        let queue = try DownloadQueue(stateDirectory: directory.file("state"))
        let settings = ServeSettings(root: directory.file("dl"), concurrency: QueueConcurrency(limit: 2), overallLimit: RateLimiter(bytesPerSecond: 0))
        let service = RPCService(queue: queue, settings: settings, secret: "s", notify: { _, _ in }, shutdown: { _ in })
        let server = try RPCServer(service: service, host: "127.0.0.1", port: 0, allowedOrigins: [])
        defer { server.stop() }
        // GIVEN a client that authenticated its socket (a silent call) and then stopped reading
        let client = try StalledClient(port: server.port)
        try client.sendText(#"{"jsonrpc":"2.0","method":"aria2.getVersion","params":["token:s"]}"#)
        usleep(200_000)

        // WHEN far more notifications than its buffers hold are sent (as a busy queue's runners would)
        let start = ContinuousClock.now
        for index in 0..<50_000 { server.notify("aria2.onDownloadComplete", gid: GID.string(Int64(index + 1))) }
        let elapsed = ContinuousClock.now - start

        // THEN sending never waited for the client (a download's thread is never held by it)
        #expect(elapsed < .seconds(2), "50,000 notifications took \(elapsed)")
        // AND the server still answers everyone else at once
        let reply = service.handle(Data(#"{"jsonrpc":"2.0","id":1,"method":"aria2.getGlobalStat","params":["token:s"]}"#.utf8))
        #expect(reply.response.flatMap(JSONValue.parse)?["result"] != nil)
        let other = try ProcessRunner.run(
            "/usr/bin/curl",
            [
                "-s", "--max-time", "5", "--data-binary", #"{"jsonrpc":"2.0","id":1,"method":"aria2.getVersion","params":["token:s"]}"#,
                "http://127.0.0.1:\(server.port)/jsonrpc",
            ])
        #expect(other.stdoutString.contains("\"version\""), "\(other.stdoutString) \(other.stderr)")
        client.hangUp()
    }
}
