import Foundation
import HaulTestSupport
import Synchronization
import Testing

@testable import HaulServe

#if canImport(Glibc)
    import Glibc
#endif

/// The server's own limits on real sockets: fragments, HEAD answers, framing, origins,
/// listeners, and what its workers keep.
@Suite("HTTP server: limits, framing and listeners", .serialized)
struct ServerLimitsTests {
    @Test(.timeLimit(.minutes(1)))
    func aMessageOfAMillionOneByteFragmentsIsCutShortAndOthersAreNotKeptWaiting() throws {
        let fixture = try ServerFixture()
        defer { fixture.server.stop() }
        let attacker = try RawClient(port: fixture.server.port)
        try attacker.handshake(port: fixture.server.port)
        // GIVEN a text message sent as a million one-byte fragments (7 MiB of frames), no token
        var frames: [UInt8] = [0x01, 0x81, 0, 0, 0, 0, 0x5B]
        frames.reserveCapacity(7 << 20)
        for _ in 1..<1_000_000 { frames += [0x00, 0x81, 0, 0, 0, 0, 0x20] }
        let sending = DispatchSemaphore(value: 0)
        nonisolated(unsafe) let sender = attacker
        let bytes = frames
        DispatchQueue.global().async {
            try? sender.send(bytes)
            sending.signal()
        }
        // WHEN another client calls meanwhile
        var slowest = Duration.zero
        for _ in 0..<5 {
            let (output, elapsed) = try fixture.curlGetVersion(maxTime: 5)
            #expect(output.contains("\"version\""))
            slowest = max(slowest, elapsed)
        }
        // THEN it is never kept waiting
        #expect(slowest < .milliseconds(300), "a call waited \(slowest)")
        // AND the fragmented message is refused (close 1009) long before its last fragment
        let close = try attacker.frame(timeout: 5)
        #expect(close.opcode == 8 && Array(close.payload.prefix(2)) == [0x03, 0xF1], "\(close.opcode) \(close.payload.prefix(40))")
        _ = sending.wait(timeout: .now() + 10)
    }

    @Test func fragmentsPerMessageAreBoundedByThePureParser() {
        var parser = WebSocketFrameParser(limit: 1 << 20, fragments: 4)
        let first = RawClient.frame(1, Array("a".utf8), final: false)
        let more = RawClient.frame(0, Array("b".utf8), final: false)
        // GIVEN a message of four fragments: read
        #expect(parser.next(first[...]) == .frame(consumed: first.count, event: nil))
        for _ in 0..<3 { #expect(parser.next(more[...]) == .frame(consumed: more.count, event: nil)) }
        // WHEN a fifth comes
        // THEN the message is refused as too big for the server
        #expect(parser.next(more[...]) == .failed(WebSocketFailure(code: 1009, reason: "message in over 4 fragments")))
    }

    @Test(.timeLimit(.minutes(1)))
    func headAnswersCarryNoBodySoTheNextAnswerIsIntact() throws {
        let fixture = try ServerFixture()
        defer { fixture.server.stop() }
        for target in ["/nope", "/jsonrpc", "/"] {
            // GIVEN a HEAD request followed on the same connection by a GET
            let client = try RawClient(port: fixture.server.port)
            try client.send("HEAD \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            // WHEN the HEAD's head is read
            let head = try client.read(timeout: 5) { bytes in RawClient.range(of: Array("\r\n\r\n".utf8), in: bytes).map { $0 + 4 } }
            // THEN the next bytes are the GET's status line, not the HEAD's body
            let next = try client.read(timeout: 5) { $0.count >= 12 ? 12 : nil }
            #expect(String(decoding: next, as: UTF8.self) == "HTTP/1.1 200", "after HEAD \(target): \(String(decoding: head, as: UTF8.self))")
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func theDashboardCannotBeFramed() throws {
        let fixture = try ServerFixture()
        defer { fixture.server.stop() }
        for target in ["/", "/nope"] {
            let client = try RawClient(port: fixture.server.port)
            try client.send("GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            let response = try client.response()
            #expect(response.headers["x-frame-options"] == "DENY", "\(target): \(response.headers)")
            #expect(response.headers["content-security-policy"]?.contains("frame-ancestors 'none'") == true, "\(target): \(response.headers)")
        }
    }

    @Test func originNullIsAdmittedOnlyWhenNamed() {
        let named = RequestPolicy(loopbackOnly: true, allowedOrigins: ["null"])
        #expect(named.refusal(host: "127.0.0.1:6800", origin: "null") == nil)
        let any = RequestPolicy(loopbackOnly: true, allowedOrigins: ["*"])
        #expect(any.refusal(host: "127.0.0.1:6800", origin: "null") != nil)
        #expect(any.refusal(host: "127.0.0.1:6800", origin: "http://ui.example") == nil)
        let none = RequestPolicy(loopbackOnly: true, allowedOrigins: [])
        #expect(none.refusal(host: "127.0.0.1:6800", origin: "null") != nil)
    }

    @Test func localhostFailsWhenTheOtherLoopbackHasItsPortTaken() throws {
        for taken in ["::1", "127.0.0.1"] {
            // GIVEN another process's socket on one loopback address, at a port free on the other
            guard let (fd, port) = Self.listen(on: taken) else { continue }
            defer { close(fd) }
            // WHEN the server is asked to listen on localhost at that port
            // THEN it refuses, naming the address taken, rather than leave it to the other process
            #expect(throws: ServeError.self) { _ = try Listener(host: "localhost", port: port) }
            do {
                _ = try Listener(host: "localhost", port: port)
            } catch {
                #expect(error.message.contains(taken.contains(":") ? "[::1]:\(port)" : "127.0.0.1:\(port)"), "\(error.message)")
            }
        }
        // AND on a port of the system's choice it always gets both
        for _ in 0..<20 {
            let listener = try Listener(host: "localhost", port: 0)
            listener.close()
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aJobInTheFirstLaneRunsBeforeEveryJobQueuedInTheLaterOne() {
        let pool = WorkerPool(count: 1, stackBytes: 1 << 20)
        defer { pool.stop() }
        let started = DispatchSemaphore(value: 0)
        let hold = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let order = Mutex<[String]>([])
        // GIVEN the one worker busy, and three jobs of sockets that never proved the token queued
        pool.submit {
            started.signal()
            hold.wait()
        }
        #expect(started.wait(timeout: .now() + 5) == .success)
        for index in 0..<3 {
            pool.submit(.later) {
                order.withLock { $0.append("later \(index)") }
                done.signal()
            }
        }
        // WHEN a request (or a call of a socket that proved the token) comes after them
        pool.submit(.first) {
            order.withLock { $0.append("first") }
            done.signal()
        }
        hold.signal()
        for _ in 0..<4 { #expect(done.wait(timeout: .now() + 5) == .success) }
        // THEN it runs first, and the others in the order they came
        #expect(order.withLock { $0 } == ["first", "later 0", "later 1", "later 2"])
    }

    @Test(.timeLimit(.minutes(1)))
    func aJobIsReleasedAsSoonAsItRanNotWhenTheQueueEmpties() {
        let pool = WorkerPool(count: 1, stackBytes: 1 << 20)
        defer { pool.stop() }
        weak var released: Tracked?
        let ran = DispatchSemaphore(value: 0)
        let hold = DispatchSemaphore(value: 0)
        do {
            // GIVEN a job holding an object, then a job that blocks, then one more queued
            let object = Tracked()
            released = object
            pool.submit { [object] in
                _ = object
                ran.signal()
            }
        }
        pool.submit {
            ran.signal()
            hold.wait()
        }
        pool.submit {}
        // WHEN the first has run and the second is running (so the queue is not empty)
        #expect(ran.wait(timeout: .now() + 5) == .success)
        #expect(ran.wait(timeout: .now() + 5) == .success)
        // THEN the first job's captures are already gone
        #expect(released == nil, "a job that ran is still held by the pool")
        hold.signal()
    }

    /// A socket listening on `address` at a free port (the same port free on the other family),
    /// or nil when this machine has no such address.
    static func listen(on address: String) -> (Int32, Int)? {
        for _ in 0..<20 {
            let port = Int.random(in: 20_000...60_000)
            let isV6 = address.contains(":")
            let fd = socket(isV6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { return nil }
            var result: Int32
            if isV6 {
                var one: Int32 = 1
                setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
                var socketAddress = sockaddr_in6()
                socketAddress.sin6_family = sa_family_t(AF_INET6)
                socketAddress.sin6_port = in_port_t(UInt16(port).bigEndian)
                socketAddress.sin6_addr = in6addr_loopback
                result = withUnsafePointer(to: &socketAddress) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
                }
            } else {
                var socketAddress = sockaddr_in()
                socketAddress.sin_family = sa_family_t(AF_INET)
                socketAddress.sin_port = in_port_t(UInt16(port).bigEndian)
                socketAddress.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
                result = withUnsafePointer(to: &socketAddress) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                }
            }
            if result == 0, Glibc.listen(fd, 8) == 0 { return (fd, port) }
            let failure = errno
            close(fd)
            if failure == EADDRNOTAVAIL || failure == EAFNOSUPPORT { return nil }
        }
        return nil
    }
}

/// An object whose release a test can observe through a weak reference.
final class Tracked: @unchecked Sendable {}
