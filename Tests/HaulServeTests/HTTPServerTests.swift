import Foundation
import HaulTestSupport
import Testing

@testable import HaulServe

#if canImport(Glibc)
    import Glibc
#endif

/// The server on real sockets, against clients that misbehave: idle sockets by the dozen, huge
/// announced bodies and frames, half-sent heads. Each test starts its own server and stops it.
@Suite("HTTP server: hostile and ordinary clients on real sockets", .serialized)
struct HTTPServerTests {
    @Test(.timeLimit(.minutes(1)))
    func sixtyFourIdleWebSocketsLockNobodyOut() throws {
        let fixture = try ServerFixture()
        defer { fixture.server.stop() }
        // GIVEN 64 WebSockets that never send a token or a message
        let idle = try (0..<64).map { _ in
            let client = try RawClient(port: fixture.server.port)
            #expect(try client.handshake(port: fixture.server.port).contains(" 101 "))
            return client
        }
        // WHEN a script posts a call
        let (output, elapsed) = try fixture.curlGetVersion(maxTime: 2)
        // THEN it is answered within a second
        #expect(output.contains("\"version\""), "\(output)")
        #expect(elapsed < .seconds(1), "answered after \(elapsed)")
        // AND a 65th socket still completes its handshake
        let another = try RawClient(port: fixture.server.port)
        #expect(try another.handshake(port: fixture.server.port).contains(" 101 "))
        #expect(idle.count == 64)
    }

    @Test(.timeLimit(.minutes(1)))
    func aFrameAnnouncing64MiBIsRefusedFromItsHeader() throws {
        let fixture = try ServerFixture()
        defer { fixture.server.stop() }
        let client = try RawClient(port: fixture.server.port)
        try client.handshake(port: fixture.server.port)
        // GIVEN only the header of a text frame announcing 64 MiB (and its mask), no payload
        let length = UInt64(64 << 20)
        try client.send(RawClient.frameHeader(1, length: length))
        // THEN the server answers with a close frame 1009 and closes, without waiting for the payload
        let close = try client.frame(timeout: 2)
        #expect(close.opcode == 8 && Array(close.payload.prefix(2)) == [0x03, 0xF1], "\(close)")
        #expect(client.closes(within: 1))
        // AND it answers everyone else as before
        #expect(try fixture.curlGetVersion().output.contains("\"version\""))
    }

    @Test(.timeLimit(.minutes(1)))
    func aBodyAnnouncedOverTheLimitGets413WithoutBeingRead() throws {
        let fixture = try ServerFixture()
        defer { fixture.server.stop() }
        for expect in ["", "Expect: 100-continue\r\n"] {
            // GIVEN a POST announcing 64 MiB, whose body is never sent
            let client = try RawClient(port: fixture.server.port)
            try client.send("POST /jsonrpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(64 << 20)\r\n\(expect)\r\n")
            // THEN the answer is 413 with a JSON-RPC error at once (no 100 Continue first), and the connection closes
            let response = try client.response(timeout: 2)
            #expect(response.status == 413 && response.body.contains("\"error\"") && response.headers["connection"] == "close", "\(response)")
            #expect(client.closes(within: 3))
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aBodyWithinTheLimitIsInvitedBy100Continue() throws {
        let fixture = try ServerFixture()
        defer { fixture.server.stop() }
        let call = Array(ServerFixture.call("aria2.getVersion").utf8)
        let client = try RawClient(port: fixture.server.port)
        try client.send("POST /jsonrpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(call.count)\r\nExpect: 100-continue\r\n\r\n")
        let interim = try client.read(timeout: 2) { $0.count >= 25 ? 25 : nil }
        #expect(String(decoding: interim, as: UTF8.self) == "HTTP/1.1 100 Continue\r\n\r\n")
        try client.send(call)
        let response = try client.response()
        #expect(response.status == 200 && response.body.contains("\"version\""), "\(response)")
        // curl (which sends Expect for large bodies by itself) gets its 100 Continue too
        let padded = ServerFixture.call("aria2.getVersion") + String(repeating: " ", count: 4000)
        let result = try ProcessRunner.run("/usr/bin/curl", ["-sv", "--max-time", "5", "-H", "Expect: 100-continue", "--data-binary", padded, fixture.url])
        #expect(result.stdoutString.contains("\"version\""), "\(result.stdoutString)")
        #expect(result.stderr.contains("< HTTP/1.1 100 Continue"), "\(result.stderr)")
    }

    @Test(.timeLimit(.minutes(1)))
    func aHalfSentHeadIsClosedAfterTheRequestTimeout() throws {
        var limits = HTTPServerLimits()
        limits.requestSeconds = 0.5
        limits.idleSeconds = 1
        let fixture = try ServerFixture(limits: limits)
        defer { fixture.server.stop() }
        // GIVEN a client that sends half a head and then nothing
        let slow = try RawClient(port: fixture.server.port)
        let start = ContinuousClock.now
        try slow.send("POST /jsonrpc HTTP/1.1\r\nHost: 127.0")
        // THEN it is closed once the request time is up, not before
        #expect(slow.closes(within: 3))
        let elapsed = ContinuousClock.now - start
        #expect(elapsed >= .milliseconds(450) && elapsed < .seconds(2), "closed after \(elapsed)")
        // AND a connection that never sends is closed after the idle time
        let silent = try RawClient(port: fixture.server.port)
        let opened = ContinuousClock.now
        #expect(silent.closes(within: 3))
        #expect(ContinuousClock.now - opened >= .milliseconds(900))
        // AND a WebSocket that sent half a frame is closed after the idle time too
        let partial = try RawClient(port: fixture.server.port)
        try partial.handshake(port: fixture.server.port)
        let sent = ContinuousClock.now
        try partial.send(Array(RawClient.frame(1, Array("{\"jsonrpc\"".utf8)).dropLast(3)))
        #expect(partial.closes(within: 3))
        #expect(ContinuousClock.now - sent >= .milliseconds(900))
        // AND a WebSocket may stay idle past both
        let socket = try RawClient(port: fixture.server.port)
        try socket.handshake(port: fixture.server.port)
        usleep(1_500_000)
        try socket.sendText(ServerFixture.call("aria2.getVersion"))
        #expect(socket.text(timeout: 2)?.contains("\"version\"") == true)
    }

    @Test(.timeLimit(.minutes(1)))
    func aKeepAliveConnectionCarriesSeveralRequestsInOrder() throws {
        let fixture = try ServerFixture()
        defer { fixture.server.stop() }
        let client = try RawClient(port: fixture.server.port)
        func post(_ id: Int) -> String {
            let body = ServerFixture.call("aria2.getVersion", id: id)
            return "POST /jsonrpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body
        }
        // GIVEN two requests one after the other on one connection
        try client.send(post(1))
        let first = try client.response()
        try client.send(post(2))
        let second = try client.response()
        // THEN both are answered, and the connection stays open
        #expect(first.status == 200 && first.body.contains("\"id\":1") && first.headers["connection"] == nil, "\(first)")
        #expect(second.status == 200 && second.body.contains("\"id\":2"), "\(second)")
        // AND pipelined requests (a HEAD among them: no body follows its head) are answered in order
        try client.send(post(3) + "HEAD / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /nope HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" + post(4))
        let third = try client.response()
        let head = try client.read(timeout: 5) { bytes in RawClient.range(of: Array("\r\n\r\n".utf8), in: bytes).map { $0 + 4 } }
        let missing = try client.response()
        let fourth = try client.response()
        #expect(third.body.contains("\"id\":3"))
        let headText = String(decoding: head, as: UTF8.self)
        #expect(headText.hasPrefix("HTTP/1.1 200 ") && headText.contains("Content-Length: ") && !headText.contains("Content-Length: 0\r"), "\(headText)")
        #expect(missing.status == 404)
        #expect(fourth.body.contains("\"id\":4"))
        // AND Connection: close is honoured
        try client.send("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        let last = try client.response()
        #expect(last.status == 200 && last.headers["connection"] == "close")
        #expect(client.closes(within: 2))
    }

    @Test(.timeLimit(.minutes(1)))
    func notificationsReachEverySocketByDefault() throws {
        let fixture = try ServerFixture()
        defer { fixture.server.stop() }
        // GIVEN a socket that made no call at all (aria2p's listener)
        let listener = try RawClient(port: fixture.server.port)
        try listener.handshake(port: fixture.server.port)
        // WHEN a download starts
        fixture.server.notify("aria2.onDownloadStart", gid: "00000000000000a1")
        // THEN it hears of it
        let heard = listener.text(timeout: 2)
        #expect(heard?.contains("aria2.onDownloadStart") == true && heard?.contains("00000000000000a1") == true, "\(String(describing: heard))")
    }

    @Test(.timeLimit(.minutes(1)))
    func withNotifyUnauthenticatedOffOnlyAnAuthenticatedSocketHears() throws {
        let fixture = try ServerFixture(notifyUnauthenticated: false)
        defer { fixture.server.stop() }
        let socket = try RawClient(port: fixture.server.port)
        try socket.handshake(port: fixture.server.port)
        // GIVEN a socket that made no call, then one with a wrong token: no notification
        fixture.server.notify("aria2.onDownloadStart", gid: "00000000000000b1")
        #expect(socket.text(timeout: 0.5) == nil)
        try socket.sendText(ServerFixture.call("aria2.getVersion", token: "wrong"))
        #expect(socket.text(timeout: 2)?.contains("Unauthorized") == true)
        fixture.server.notify("aria2.onDownloadStart", gid: "00000000000000b2")
        #expect(socket.text(timeout: 0.5) == nil)
        // WHEN it makes an authenticated call
        try socket.sendText(ServerFixture.call("aria2.getVersion"))
        #expect(socket.text(timeout: 2)?.contains("\"version\"") == true)
        // THEN it hears the next notification
        fixture.server.notify("aria2.onDownloadComplete", gid: "00000000000000b3")
        #expect(socket.text(timeout: 2)?.contains("00000000000000b3") == true)
    }

    @Test(.timeLimit(.minutes(1)))
    func stopIsPromptWithSixtyFourIdleSocketsOpen() throws {
        let fixture = try ServerFixture()
        var stopped = false
        defer { if !stopped { fixture.server.stop() } }
        let idle = try (0..<64).map { index in
            let client = try RawClient(port: fixture.server.port)
            if index % 2 == 0 { try client.handshake(port: fixture.server.port) }
            return client
        }
        // WHEN the server stops with 32 idle WebSockets and 32 idle HTTP connections open
        let start = ContinuousClock.now
        fixture.server.stop()
        stopped = true
        let elapsed = ContinuousClock.now - start
        // THEN it returned within a second, and every connection was closed
        #expect(elapsed < .seconds(1), "stop() took \(elapsed)")
        #expect(idle.allSatisfy { $0.closes(within: 1) })
        // AND a second stop() is harmless
        fixture.server.stop()
    }

    @Test(.timeLimit(.minutes(1)))
    func aSocketsMessagesAreAnsweredInOrderAndPingsPonged() throws {
        let fixture = try ServerFixture()
        defer { fixture.server.stop() }
        let socket = try RawClient(port: fixture.server.port)
        try socket.handshake(port: fixture.server.port)
        // GIVEN 20 calls in one write, a ping among them
        var bytes: [UInt8] = []
        for id in 0..<20 {
            bytes += RawClient.frame(1, Array(ServerFixture.call("aria2.getVersion", id: id).utf8))
            if id == 10 { bytes += RawClient.frame(9, Array("hi".utf8)) }
        }
        try socket.send(bytes)
        // THEN the answers come one per call, in order, and the ping is answered in its place
        var ids: [Int] = []
        var pongs = 0
        while ids.count < 20 {
            let frame = try socket.frame()
            if frame.opcode == 10 {
                #expect(frame.payload == Array("hi".utf8))
                pongs += 1
                continue
            }
            let text = String(decoding: frame.payload, as: UTF8.self)
            if let range = text.range(of: #""id":[0-9]+"#, options: .regularExpression) { ids.append(Int(text[range].dropFirst(5)) ?? -1) }
        }
        #expect(ids == Array(0..<20) && pongs == 1)
        // AND a close is echoed, then the connection closes
        try socket.sendFrame(8, [0x03, 0xE8])
        let close = try socket.frame()
        #expect(close.opcode == 8 && close.payload == [0x03, 0xE8])
        #expect(socket.closes(within: 2))
    }

    @Test(.timeLimit(.minutes(1)))
    func beyondTheCapsSocketsThatProvedTheTokenAreKeptAndTheNewcomerRefused() throws {
        var limits = HTTPServerLimits()
        limits.connections = 3
        limits.webSockets = 2
        let fixture = try ServerFixture(limits: limits)
        defer { fixture.server.stop() }
        // GIVEN two WebSockets (the cap), each of which made a call with the token
        let sockets = try (0..<2).map { _ in try RawClient(port: fixture.server.port) }
        for (index, socket) in sockets.enumerated() {
            #expect(try socket.handshake(port: fixture.server.port).contains(" 101 "))
            try socket.sendText(ServerFixture.call("aria2.getVersion", id: index))
            #expect(socket.text(timeout: 5)?.contains("\"version\"") == true)
        }
        // WHEN a third upgrade comes: none may make room, so it is refused with 503
        do {
            let third = try RawClient(port: fixture.server.port)
            #expect(try third.handshake(port: fixture.server.port).contains(" 503 "))
            #expect(third.closes(within: 3))
        }
        usleep(200_000)
        // GIVEN a third connection with a request under way (the connection cap), its call with a worker
        let busy = try RawClient(port: fixture.server.port)
        try busy.send("GET /nope HTTP/1.1\r\n")
        usleep(100_000)
        // WHEN a fourth comes, and the third's request has begun: the third may go, it is not the token's
        let fourth = try RawClient(port: fixture.server.port)
        #expect(busy.closes(within: 2), "a begun and unfinished request was not given up to make room")
        // AND the sockets that proved the token are still answered
        for (index, socket) in sockets.enumerated() {
            try socket.sendText(ServerFixture.call("aria2.getVersion", id: 10 + index))
            #expect(socket.text(timeout: 5)?.contains("\"version\"") == true)
        }
        try fourth.send("GET /nope HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(try fourth.response().status == 404)
    }

    @Test(.timeLimit(.minutes(1)))
    func beyondTheCapsTheIdleMakeRoom() throws {
        var limits = HTTPServerLimits()
        limits.connections = 4
        limits.webSockets = 2
        let fixture = try ServerFixture(limits: limits)
        defer { fixture.server.stop() }
        // GIVEN two idle WebSockets (the cap), the first of which proved the token
        let sockets = try (0..<2).map { _ in try RawClient(port: fixture.server.port) }
        for socket in sockets { #expect(try socket.handshake(port: fixture.server.port).contains(" 101 ")) }
        try sockets[0].sendText(ServerFixture.call("aria2.getVersion"))
        #expect(sockets[0].text(timeout: 5)?.contains("\"version\"") == true)
        // WHEN a third upgrade comes
        let third = try RawClient(port: fixture.server.port)
        // THEN it is accepted, and the socket without the token made room for it
        #expect(try third.handshake(port: fixture.server.port).contains(" 101 "))
        #expect(sockets[1].closes(within: 2))
        try sockets[0].sendText(ServerFixture.call("aria2.getVersion", id: 2))
        #expect(sockets[0].text(timeout: 5)?.contains("\"version\"") == true)
        // GIVEN then two idle HTTP connections beside the two WebSockets (the cap of four)
        let idle = try (0..<2).map { _ in try RawClient(port: fixture.server.port) }
        usleep(100_000)
        // WHEN a fifth client calls
        let (output, elapsed) = try fixture.curlGetVersion(maxTime: 3)
        // THEN it is answered at once, and the longest idle HTTP connection made room
        #expect(output.contains("\"version\""), "\(output)")
        #expect(elapsed < .seconds(1))
        #expect(idle[0].closes(within: 2))
    }

    @Test(.timeLimit(.minutes(1)))
    func aForeignOriginsUpgradeIsRefusedWith403() throws {
        let fixture = try ServerFixture()
        defer { fixture.server.stop() }
        let page = try RawClient(port: fixture.server.port)
        #expect(try page.handshake(port: fixture.server.port, origin: "http://evil.example").contains(" 403 "))
        let own = try RawClient(port: fixture.server.port)
        #expect(try own.handshake(port: fixture.server.port, origin: "http://127.0.0.1:\(fixture.server.port)").contains(" 101 "))
    }

    @Test(.timeLimit(.minutes(1)))
    func malformedRequestsGetTheirStatusAndAClose() throws {
        let fixture = try ServerFixture()
        defer { fixture.server.stop() }
        let cases: [(String, Int)] = [
            ("GARBAGE\r\n\r\n", 400),
            ("POST /jsonrpc HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411),
            ("POST /jsonrpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX: " + String(repeating: "a", count: 17_000) + "\r\n\r\n", 431),
            ("GET /jsonrpc HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", 426),
            ("PUT /jsonrpc HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 405),
        ]
        for (request, status) in cases {
            let client = try RawClient(port: fixture.server.port)
            try client.send(request)
            let response = try client.response()
            #expect(response.status == status, "\(request.prefix(60).debugDescription): \(response)")
        }
    }

    @Test func listeningReportsThePortAndRefusesOneTaken() throws {
        let fixture = try ServerFixture()
        defer { fixture.server.stop() }
        #expect(fixture.server.port > 0)
        // A port in use: said so
        #expect(throws: ServeError("cannot listen on 127.0.0.1:\(fixture.server.port): 127.0.0.1:\(fixture.server.port) is in use by another process")) {
            _ = try RPCServer(service: fixture.service, host: "127.0.0.1", port: fixture.server.port, allowedOrigins: [])
        }
        #expect(throws: ServeError.self) {
            _ = try RPCServer(service: fixture.service, host: "no-such-host.invalid", port: 0, allowedOrigins: [])
        }
        // localhost: a name, resolved, and both loopbacks on its port (where this machine has ::1)
        let named = try RPCServer(service: fixture.service, host: "localhost", port: 0, allowedOrigins: [])
        defer { named.stop() }
        let client = try RawClient(port: named.port)
        try client.send("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try client.response().status == 200)
        let hasIPv6 = (try? RPCServer(service: fixture.service, host: "::1", port: 0, allowedOrigins: []))
        if let literal = hasIPv6 {
            defer { literal.stop() }
            for server in [literal, named] {
                let page = try ProcessRunner.run("/usr/bin/curl", ["-s", "-g", "-o", "/dev/null", "-w", "%{http_code}", "http://[::1]:\(server.port)/"])
                #expect(page.stdoutString == "200", "[::1]:\(server.port): \(page.stdoutString) \(page.stderr)")
            }
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aWorkerThatStopsThePoolDoesNotWaitForItself() {
        let pool = WorkerPool(count: 2, stackBytes: 1 << 20)
        let done = DispatchSemaphore(value: 0)
        pool.submit {
            pool.stop()
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 5) == .success)
        #expect(!pool.submit {})
    }

    @Test func theNotificationTextIsWhatJSONValueWrites() {
        func expected(_ method: String, _ gid: String) -> JSONValue {
            ["jsonrpc": "2.0", "method": .string(method), "params": [["gid": .string(gid)]]]
        }
        // Byte for byte for what is really sent
        #expect(RPCServer.notification("aria2.onDownloadStart", gid: "2089b05ecca3d829") == expected("aria2.onDownloadStart", "2089b05ecca3d829").serialized())
        // And the same value for anything that needs escaping
        let odd = "a\"b\\c\nd\u{01}e/é"
        #expect(JSONValue.parse(RPCServer.notification(odd, gid: odd)) == expected(odd, odd))
        // Byte for byte with the writer's escapes too: `/` as is, backspace and form feed short
        let escaped = "a/\u{08}\u{0C}\u{01}"
        #expect(RPCServer.notification(escaped, gid: escaped) == expected(escaped, escaped).serialized())
        #expect(
            String(decoding: RPCServer.notification(escaped, gid: "g"), as: UTF8.self) == #"{"jsonrpc":"2.0","method":"a/\b\f\u0001","params":[{"gid":"g"}]}"#)
    }

    @Test func workersHaveTheirLargeStacksAndStopAfterTheirJobs() throws {
        let pool = WorkerPool(count: 2, stackBytes: 4 << 20)
        let sizes = NSLockedArray()
        let done = DispatchSemaphore(value: 0)
        pool.submit {
            sizes.append(Self.sizeOfTheMappingHoldingThisStack())
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 5) == .success)
        #expect(sizes.values.first ?? 0 >= 4 << 20, "stack of \(sizes.values) bytes")
        // A job running when stop() is called is waited for; none is taken after
        pool.submit { usleep(200_000) }
        usleep(50_000)
        let start = ContinuousClock.now
        pool.stop()
        #expect(ContinuousClock.now - start >= .milliseconds(100))
        #expect(!pool.submit {})
    }
}

extension HTTPServerTests {
    /// The size of the memory mapping (from /proc/self/maps) that holds a local variable of the
    /// calling thread: its stack, as glibc maps it for a thread it creates.
    static func sizeOfTheMappingHoldingThisStack() -> Int {
        var local = 0
        let address = withUnsafeMutablePointer(to: &local) { UInt(bitPattern: $0) }
        guard let maps = try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8) else { return 0 }
        for line in maps.split(separator: "\n") {
            let range = line.split(separator: " ")[0].split(separator: "-")
            guard range.count == 2, let low = UInt(range[0], radix: 16), let high = UInt(range[1], radix: 16) else { continue }
            if (low..<high).contains(address) { return Int(high - low) }
        }
        return 0
    }
}

/// Integers appended from several threads.
final class NSLockedArray: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [Int] = []

    func append(_ value: Int) { lock.withLock { storage.append(value) } }
    var values: [Int] { lock.withLock { storage } }
}
