import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `haul serve`'s own limits, tried as a hostile local process would without the token: what one
/// message may make it build and hold, what its workers keep, how many idle sockets it keeps,
/// and a stop sent as early as it can be. Memory is read from the server's `/proc` entry.
@Suite("haul serve: limits under hostile load", .serialized)
struct CLIServeLimitsTests {
    /// The server's resident set and its peak so far, in MiB.
    static func memory(_ pid: Int32) throws -> (resident: Int, peak: Int) {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        func field(_ name: String) -> Int {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
            return (Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0) / 1024
        }
        return (field("VmRSS"), field("VmHWM"))
    }

    /// Waits until the resident set stops moving (two readings half a second apart within 2 MiB),
    /// at most `timeout` seconds; returns the last reading.
    static func settledMemory(_ pid: Int32, timeout: Double = 20) throws -> (resident: Int, peak: Int) {
        var last = try memory(pid)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            usleep(500_000)
            let now = try memory(pid)
            if abs(now.resident - last.resident) <= 2 { return now }
            last = now
        }
        return last
    }

    /// `tries` calls one after another, as `getVersion`: whether each was answered, and the
    /// fastest and the median time. A server that locks clients out answers none of them soon; a
    /// machine busy with other work may hold up one (a test's "at once" is the fastest, or the
    /// median, not every call's: one slow answer on a loaded machine is not a lockout).
    static func answers(_ serve: ServeProcess, tries: Int = 3, maxTime: Double = 5) throws -> (
        allAnswered: Bool, fastest: Duration, median: Duration
    ) {
        var times: [Duration] = []
        var allAnswered = true
        for _ in 0..<tries {
            let (answered, elapsed) = try getVersion(serve, maxTime: maxTime)
            allAnswered = allAnswered && answered
            times.append(elapsed)
        }
        times.sort()
        return (allAnswered, times[0], times[times.count / 2])
    }

    /// 48 WebSockets without the token, each sending six batches of 1,000 `system.listMethods`
    /// calls (an open method; about 1.7 MB of answers a batch) with a 4 KiB receive buffer, and
    /// never reading: returned so they stay open.
    static func unreadBatches(_ serve: ServeProcess) throws -> [RawClient] {
        let call = #"{"jsonrpc":"2.0","id":1,"method":"system.listMethods"}"#
        let batch = "[" + Array(repeating: call, count: 1000).joined(separator: ",") + "]"
        var sockets: [RawClient] = []
        for _ in 0..<48 {
            let socket = try RawClient(port: serve.port, receiveBuffer: 4096)
            try socket.handshake(port: serve.port)
            sockets.append(socket)
        }
        for _ in 0..<6 {
            for socket in sockets { try? socket.send(RawClient.frame(1, Array(batch.utf8))) }
        }
        return sockets
    }

    static func getVersion(_ serve: ServeProcess, maxTime: Double = 5) throws -> (answered: Bool, elapsed: Duration) {
        let start = ContinuousClock.now
        let body = #"{"jsonrpc":"2.0","id":1,"method":"aria2.getVersion","params":["token:\#(serve.secret)"]}"#
        let reply = try Curl.run(["-s", "--max-time", String(maxTime), "--data-binary", body, serve.base + "/jsonrpc"])
        return (reply.stdoutString.contains("\"version\""), ContinuousClock.now - start)
    }

    @Test(.timeLimit(.minutes(2)))
    func unreadBatchesOfOpenCallsNeitherSwellNorStayHeld() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-batch-memory")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { _ = try? serve.stop() }
        #expect(try Self.getVersion(serve).answered)
        let before = try Self.settledMemory(serve.running.pid)

        // GIVEN eight WebSockets without the token, each sending one 1 MiB message that is a batch
        // of about 20,000 `system.listMethods` calls (an open method), and never reading
        let call = #"{"jsonrpc":"2.0","id":1,"method":"system.listMethods"}"#
        let batch = "[" + Array(repeating: call, count: (1 << 20) / (call.utf8.count + 1) - 1).joined(separator: ",") + "]"
        let sockets = try (0..<8).map { _ in
            let socket = try RawClient(port: serve.port, receiveBuffer: 4096)
            try socket.handshake(port: serve.port)
            try socket.sendText(batch)
            return socket
        }
        // WHEN the server has handled them
        usleep(1_000_000)
        let after = try Self.settledMemory(serve.running.pid)

        // THEN its peak and what it holds grew by little (each answer was 19 MB, built whole and
        // held while the sockets stayed open: +600 MiB peak, +580 MiB held)
        #expect(after.peak - before.peak < 64, "peak grew from \(before.peak) to \(after.peak) MiB")
        // (The bound leaves room for what the allocator keeps: 33 MiB was seen once in a full run,
        // against +580 MiB for the defect.)
        #expect(after.resident - before.resident < 48, "held grew from \(before.resident) to \(after.resident) MiB")
        // AND it still answers everyone else
        #expect(try Self.getVersion(serve).answered)
        #expect(sockets.count == 8)
    }

    @Test(.timeLimit(.minutes(2)))
    func socketsThatNeverReadTheirAnswersAreClosedBeforeTheyHoldMuch() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-unread-answers")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { _ = try? serve.stop() }
        #expect(try Self.getVersion(serve).answered)
        let before = try Self.settledMemory(serve.running.pid)

        // GIVEN 48 WebSockets without the token, each sending batches of open calls within the
        // per-message bound (about 1.7 MB of answers each) and never reading any
        let sockets = try Self.unreadBatches(serve)
        usleep(2_000_000)
        let after = try Self.settledMemory(serve.running.pid)

        // THEN what the server holds stays bounded (every socket's backlog of unsent answers counts
        // against one budget; the largest are closed past it)
        #expect(after.resident - before.resident < 128, "held grew from \(before.resident) to \(after.resident) MiB")
        // AND it still answers everyone else at once
        let (answered, fastest, _) = try Self.answers(serve)
        #expect(answered)
        #expect(fastest < .seconds(1), "answered after \(fastest) at the fastest of three")
        withExtendedLifetime(sockets) {}
    }

    @Test(.timeLimit(.minutes(2)))
    func aCallWithTheTokenIsAnsweredAtOnceWhileSocketsWithoutItHaveBatchesQueued() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-lanes")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { _ = try? serve.stop() }
        #expect(try Self.getVersion(serve).answered)
        // GIVEN 48 WebSockets without the token, each sending batches of 1,000 open calls (more
        // work than the eight workers do in seconds) and never reading
        let sockets = try Self.unreadBatches(serve)
        // WHEN a client with the token calls while their batches are being worked through
        let (answered, fastest, median) = try Self.answers(serve)
        // THEN it is answered at once: its call waits for no batch of theirs still queued (each
        // waited behind all of them, first in first out: a median of 3.2 and 5.0 s in two runs)
        #expect(answered)
        #expect(median < .seconds(1), "answered after \(median) at the median of three (fastest \(fastest))")
        #expect(sockets.count == 48)
    }

    @Test(.timeLimit(.minutes(3)))
    func aWorkerKeepsNoRequestItRan() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-worker-memory")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { _ = try? serve.stop() }
        #expect(try Self.getVersion(serve).answered)
        let before = try Self.settledMemory(serve.running.pid)

        // GIVEN 24 keep-alive clients (more than the 8 workers) each posting 1 MiB bodies, JSON-RPC
        // notifications (answered 204) padded with spaces, without the token, one after another
        let body = #"{"jsonrpc":"2.0","method":"system.listMethods""# + String(repeating: " ", count: (1 << 20) - 64) + "}"
        let request = Array("POST /jsonrpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
        let rounds = 30
        let failures = LockedCounter()
        let group = DispatchGroup()
        let port = serve.port
        for _ in 0..<24 {
            DispatchQueue.global().async(group: group) {
                guard let client = try? RawClient(port: port) else { return failures.add() }
                for _ in 0..<rounds {
                    guard (try? client.send(request)) != nil, let reply = try? client.response(timeout: 20), reply.status == 204 else {
                        return failures.add()
                    }
                }
            }
        }
        group.wait()
        let after = try Self.memory(serve.running.pid)

        // THEN all 720 were answered, and the peak did not grow with their number (each worker
        // kept every job it ran until its queue ran empty: +1 MiB a request, about +700 MiB here)
        #expect(failures.value == 0)
        #expect(after.peak - before.peak < 200, "peak grew from \(before.peak) to \(after.peak) MiB over \(24 * rounds) requests")
    }

    @Test(.timeLimit(.minutes(2)))
    func hundredsOfIdleSocketsLockNoNewClientOut() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-idle-sockets")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { _ = try? serve.stop() }
        // GIVEN a WebSocket that made a call with the token (a web UI's)
        let ui = try RawClient(port: serve.port)
        try ui.handshake(port: serve.port)
        try ui.sendText(#"{"jsonrpc":"2.0","id":1,"method":"aria2.getVersion","params":["token:\#(serve.secret)"]}"#)
        #expect(ui.text(timeout: 5)?.contains("\"version\"") == true)
        // AND 300 WebSockets without the token and 600 TCP connections that never send a byte
        var idle: [RawClient] = []
        for _ in 0..<300 {
            let socket = try RawClient(port: serve.port)
            _ = try? socket.handshake(port: serve.port)
            idle.append(socket)
        }
        for _ in 0..<600 { idle.append(try RawClient(port: serve.port)) }
        usleep(300_000)

        // WHEN a new client posts a call
        let (answered, elapsed, _) = try Self.answers(serve, maxTime: 3)
        // THEN it is answered within a second (the server made room by closing idle sockets)
        #expect(answered, "a new client's call was refused with \(idle.count) idle sockets open")
        #expect(elapsed < .seconds(1), "answered after \(elapsed) at the fastest of three")
        // AND a new WebSocket completes its handshake
        let late = try RawClient(port: serve.port)
        #expect((try? late.handshake(port: serve.port))?.contains(" 101 ") == true)
        // AND the web UI's socket, which proved the token, was kept and is still answered
        try ui.sendText(#"{"jsonrpc":"2.0","id":2,"method":"aria2.getVersion","params":["token:\#(serve.secret)"]}"#)
        #expect(ui.text(timeout: 5)?.contains("\"version\"") == true, "the authenticated socket was closed")
    }

    @Test(.timeLimit(.minutes(3)))
    func aStopSentAsSoonAsTheServerListensIsNeverLost() throws {
        let work = try TemporaryDirectory(prefix: "haul-serve-early-stop")
        // GIVEN a store of 2,000 paused downloads
        let urls = (0..<2000).map { "http://127.0.0.1:9/file\($0)" }
        let added = try HaulBinary.run(["queue", "add", "--paused", "--state", work.file("state"), "-d", work.file("dl")] + urls, timeout: 120)
        #expect(added.status == 0, "\(added.stderr)")
        for round in 0..<6 {
            // WHEN haul serve is sent SIGTERM as soon as it says it listens
            let serve = try ServeProcess(state: round % 2 == 0 ? work.file("state") : work.file("empty\(round)"), directory: work.file("dl"))
            serve.running.send(SIGTERM)
            // THEN it ends, with the exit code of SIGTERM
            let ending = try serve.running.wait(timeout: 20)
            #expect(ending == .exited(143), "round \(round): \(ending)")
        }
        for round in 0..<4 {
            // WHEN aria2.shutdown is its first call
            let serve = try ServeProcess(state: round % 2 == 0 ? work.file("state") : work.file("empty-rpc\(round)"), directory: work.file("dl"))
            #expect((try serve.result("aria2.shutdown")) as? String == "OK")
            // THEN it ends
            let ending = try serve.running.wait(timeout: 20)
            #expect(ending == .exited(0), "round \(round): \(ending)")
        }
    }
}

/// A count several threads add to.
final class LockedCounter: @unchecked Sendable {
    // @unchecked: every access goes through `lock`.
    private let lock = NSLock()
    private var count = 0

    func add() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
