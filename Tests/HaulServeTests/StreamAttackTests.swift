import Foundation
import HaulTestSupport
import Testing

@testable import HaulServe

#if canImport(Glibc)
    import Glibc
#endif

/// An event stream whose worker takes until `go` is signalled to answer (a busy machine), having
/// read a journal whose newest id was 0; it signals `entered` when it starts.
private struct SlowEventsHandler: HTTPServerHandler {
    let entered: DispatchSemaphore
    let go: DispatchSemaphore

    func route(_ head: HTTPRequestHead) -> HTTPRoute { .stream }

    func respond(to head: HTTPRequestHead, body: Data) -> HTTPResponse { HTTPResponse.text(404, "none") }

    func message(_ payload: Data) -> WebSocketReply { WebSocketReply(message: nil, authenticated: false) }

    func stream(to head: HTTPRequestHead) -> HTTPStreamReply {
        entered.signal()
        go.wait()
        return .events(HTTPResponse(status: 200, headers: [HTTPHeader(name: "Content-Type", value: "text/event-stream")]), initial: Data(), after: 0)
    }
}

/// Hostile clients and careless users against the streamed answers (found by a hostile review).
@Suite("haul serve: streamed answers under attack", .serialized)
struct StreamAttackTests {
    /// Reads one response head (up to its blank line) and returns its length in bytes.
    private static func readHead(_ client: RawClient) throws -> [UInt8] {
        try client.read(timeout: 5) { bytes in RawClient.range(of: Array("\r\n\r\n".utf8), in: bytes).map { $0 + 4 } }
    }

    /// A file of `size` bytes (`seed`) written at `path` and served, and a client that asked for
    /// it, had a 200, read its first 64 KiB and waited 0.3 s: the server, the client, the file's
    /// bytes, and the body read so far.
    private static func clientPartWayThrough(_ path: String, size: Int, seed: UInt64) throws -> (HTTPServer, RawClient, [UInt8], [UInt8]) {
        try TestData.writeFile(at: path, size: size, seed: seed)
        let original = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let server = try HTTPServer(host: "127.0.0.1", port: 0, subscribeNewSockets: false, handler: StreamingHandler(path: path))
        let client = try RawClient(port: server.port, receiveBuffer: 4096)
        try client.send("GET /file HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(String(decoding: try readHead(client), as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        var body: [UInt8] = []
        while body.count < 64 << 10, let more = client.receive(timeout: 2), !more.isEmpty { body += more }
        usleep(300_000)
        return (server, client, original, body)
    }

    @Test(.timeLimit(.minutes(1)))
    func aFileRewrittenInPlaceWhileItIsSentIsCutNeverSentWithMixedBytes() throws {
        // GIVEN a 32 MiB file being sent to a client that has read only its first bytes
        let directory = try TemporaryDirectory(prefix: "haul-stream-rewrite")
        let path = directory.file("a.bin")
        let size = 32 << 20
        let (server, client, original, started) = try Self.clientPartWayThrough(path, size: size, seed: 1)
        defer { server.stop() }
        var body = started
        // WHEN the file is rewritten in place (same name, same inode, same size, other bytes), as
        // an editor or `dd conv=notrunc` would
        let writer = open(path, O_WRONLY | O_CLOEXEC)
        #expect(writer >= 0)
        let replacement = TestData.bytes(count: size, seed: 2)
        let written = replacement.withUnsafeBytes { pwrite(writer, $0.baseAddress, size, 0) }
        #expect(written == size)
        close(writer)
        // THEN the client reads every byte the server sends until it closes
        let deadline = ContinuousClock.now + .seconds(40)
        while ContinuousClock.now < deadline, let more = client.receive(timeout: 5) { body += more }
        // AND what it got is the original's start only: the answer is cut (shorter than its
        // Content-Length, which the client sees) rather than completed with the new bytes
        let mixed = body != Array(original.prefix(body.count))
        let firstForeign = zip(body, original).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        #expect(!mixed, "\(body.count) bytes received; the first not the original's at offset \(firstForeign ?? -1)")
        #expect(body.count < size, "a full-length answer was sent for a file that changed while it was sent")
    }

    @Test(.timeLimit(.minutes(1)))
    func aFileRewrittenInPlaceWithItsModificationTimePutBackIsCutNeverSentWithMixedBytes() throws {
        // GIVEN an 8 MiB file being sent to a client that has read only its first bytes
        let directory = try TemporaryDirectory(prefix: "haul-stream-touch")
        let path = directory.file("a.bin")
        let size = 8 << 20
        let (server, client, original, started) = try Self.clientPartWayThrough(path, size: size, seed: 4)
        defer { server.stop() }
        var body = started
        // WHEN a local process rewrites it in place (same inode, same size, other bytes) and puts
        // its modification time back (futimens: any process that may write the file may do this;
        // only the change time, which no process can set, still tells)
        let writer = open(path, O_WRONLY | O_CLOEXEC)
        #expect(writer >= 0)
        var before = stat()
        #expect(fstat(writer, &before) == 0)
        let replacement = TestData.bytes(count: size, seed: 5)
        #expect(replacement.withUnsafeBytes { pwrite(writer, $0.baseAddress, size, 0) } == size)
        var times = [before.st_atim, before.st_mtim]
        #expect(futimens(writer, &times) == 0)
        close(writer)
        // THEN the client never gets a byte of the new content under the answer that began with the old
        let deadline = ContinuousClock.now + .seconds(40)
        while ContinuousClock.now < deadline, let more = client.receive(timeout: 5) { body += more }
        let firstForeign = zip(body, original).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        #expect(firstForeign == nil, "\(body.count) bytes received; the first not the original's at offset \(firstForeign ?? -1)")
        #expect(body.count < size, "a full-length answer was sent for a file that changed while it was sent")
    }

    @Test(.timeLimit(.minutes(1)))
    func aFileDeletedOrRenamedWhileItIsSentIsCutCleanNeverWithForeignBytes() throws {
        for rename in [false, true] {
            // GIVEN an 8 MiB file being sent to a client that has read only its first bytes
            let directory = try TemporaryDirectory(prefix: "haul-stream-unlink")
            let path = directory.file("a.bin")
            let size = 8 << 20
            try TestData.writeFile(at: path, size: size, seed: 3)
            let original = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            let server = try HTTPServer(host: "127.0.0.1", port: 0, subscribeNewSockets: false, handler: StreamingHandler(path: path))
            defer { server.stop() }
            let client = try RawClient(port: server.port, receiveBuffer: 4096)
            try client.send("GET /file HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            _ = try Self.readHead(client)
            var body: [UInt8] = []
            while body.count < 64 << 10, let more = client.receive(timeout: 2), !more.isEmpty { body += more }
            // WHEN the file is deleted (or renamed, as haul.move does): its bytes do not change, but
            // its change time moves as it would after a rewrite whose modification time was put back
            #expect(rename ? Glibc.rename(path, directory.file("b.bin")) == 0 : unlink(path) == 0)
            // THEN the answer is cut there, clean: the original's first bytes only, shorter than
            // announced (the client resumes with If-Range), never completed with bytes it cannot vouch for
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline, let more = client.receive(timeout: 5) { body += more }
            #expect(body == Array(original.prefix(body.count)), "rename: \(rename): foreign bytes")
            #expect(body.count < size, "rename: \(rename): \(body.count) bytes")
        }
    }

    @Test(
        arguments: [
            // GIVEN numbers past what 64 bits hold, for a 1000-byte file
            // THEN a last byte past the end means "to the end" (RFC 9110 14.1.2), however large
            ("bytes=0-99999999999999999999", FileRange.partial(first: 0, last: 999)),
            ("bytes=10-99999999999999999999", .partial(first: 10, last: 999)),
            // AND a first byte past the end is unsatisfiable (416), however large
            ("bytes=99999999999999999999-", .unsatisfiable),
            ("bytes=99999999999999999999-99999999999999999999", .unsatisfiable),
            // AND a suffix longer than the file is the whole file as a range
            ("bytes=-99999999999999999999", .partial(first: 0, last: 999)),
        ] as [(String, FileRange)])
    func aRangeWithNumbersPast64BitsIsReadAsItsValueNotIgnored(range: String, expected: FileRange) {
        #expect(FileRange.of(range, ifRange: nil, length: 1000, etag: "\"1\"") == expected)
    }

    @Test(.timeLimit(.minutes(1)))
    func clientsThatStoppedReadingFilesCannotLockACallOutOfAFullServer() throws {
        // GIVEN a server full (4 connections at most) of file downloads whose clients stopped reading
        var limits = HTTPServerLimits()
        limits.connections = 4
        let sparse = try SparseFileServer(prefix: "haul-stream-full", limits: limits)
        let server = sparse.server
        defer { server.stop() }
        let stalled = try (0..<4).map { _ in
            let client = try RawClient(port: server.port, receiveBuffer: 4096)
            try client.send("GET /file HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            _ = try Self.readHead(client)
            return client
        }
        // (their output has stood still for a few seconds)
        usleep(3_000_000)
        // WHEN a call comes
        let answer = try ProcessRunner.run("/usr/bin/curl", ["-s", "--max-time", "5", "--data-binary", "x", "http://127.0.0.1:\(server.port)/call"])
        // THEN it is answered (room made by closing a stalled download, which can resume with Range)
        #expect(answer.stdoutString == "answered\n", "curl exit \(answer.status)")
        withExtendedLifetime(stalled) {}
    }

    @Test(.timeLimit(.minutes(1)))
    func clientsThatReadFilesSlowlyCannotLockACallOutOfAFullServer() throws {
        // GIVEN a server of 4 connections at most, each taken by a download of a large file whose
        // client reads slowly but steadily (a little every 100 ms through a small socket buffer:
        // its output never stands still for 2 s, so none of them counts as stalled)
        var limits = HTTPServerLimits()
        limits.connections = 4
        let sparse = try SparseFileServer(prefix: "haul-stream-slow", limits: limits)
        let server = sparse.server
        defer { server.stop() }
        var heads: [String] = []
        let readers = try (0..<4).map { _ in
            let client = try RawClient(port: server.port, receiveBuffer: 4096)
            try client.send("GET /file HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            heads.append(String(decoding: try Self.readHead(client), as: UTF8.self))
            return client
        }
        func readALittle(for seconds: Double) -> Int {
            var open = 0
            let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
            while ContinuousClock.now < deadline {
                open = readers.filter { $0.receive(timeout: 0.01) != nil }.count
                usleep(100_000)
            }
            return open
        }
        #expect(readALittle(for: 3) == 4)
        // WHEN calls come, one after another, while the downloads go on being read
        var answered = 0
        for _ in 0..<3 {
            let call = Process()
            call.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            let output = Pipe()
            call.arguments = ["-s", "--max-time", "4", "--data-binary", "x", "http://127.0.0.1:\(server.port)/call"]
            call.standardOutput = output
            call.standardError = FileHandle.nullDevice
            try call.run()
            while call.isRunning { _ = readALittle(for: 0.2) }
            if String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) == "answered\n" { answered += 1 }
        }
        // THEN each is answered: file downloads never take every connection, however steadily
        // their clients read
        #expect(answered == 3, "answered \(answered) of 3 calls")
        // AND the files sent at once stop one connection short of them all (3 of 4): the next
        // file request is told to come back (503, Retry-After) rather than take the last one
        #expect(heads.filter { $0.hasPrefix("HTTP/1.1 200") }.count == 3)
        #expect(heads.last?.hasPrefix("HTTP/1.1 503") == true && heads.last?.contains("Retry-After: 5") == true, "\(heads.last ?? "")")
    }

    @Test(.timeLimit(.minutes(1)))
    func eventStreamsReadSlowlyOnABusyServerCannotLockACallOutOfAFullServer() throws {
        // GIVEN a busy server (events published at about 400 KB/s) of 4 connections at most, each
        // taken by an event stream whose client reads a little every 100 ms through a small
        // socket buffer: its output is never empty and never still for 2 s, so none of them is
        // idle or stalled
        var limits = HTTPServerLimits()
        limits.connections = 4
        let server = try HTTPServer(host: "127.0.0.1", port: 0, limits: limits, subscribeNewSockets: false, handler: StreamingHandler(path: "/nonexistent"))
        defer { server.stop() }
        let publishing = ManagedAtomicFlag()
        let publisher = Thread {
            let event = StreamEvent(durableID: nil, bytes: Data(("data: " + String(repeating: "x", count: 2000) + "\n\n").utf8))
            while !publishing.isSet {
                server.publish(event)
                usleep(5_000)
            }
        }
        publisher.start()
        defer { publishing.set() }
        var heads: [String] = []
        let readers = try (0..<4).map { _ in
            let client = try RawClient(port: server.port, receiveBuffer: 4096)
            try client.send("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            heads.append(String(decoding: try Self.readHead(client), as: UTF8.self))
            return client
        }
        var closed: Set<Int> = []
        func readALittle(for seconds: Double) {
            let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
            while ContinuousClock.now < deadline {
                for (index, reader) in readers.enumerated() where !closed.contains(index) {
                    if reader.receive(timeout: 0.01) == nil { closed.insert(index) }
                }
                usleep(100_000)
            }
        }
        readALittle(for: 3)
        // WHEN calls come, one after another, while the streams go on being read
        var answered = 0
        for _ in 0..<3 {
            let call = Process()
            call.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            let output = Pipe()
            call.arguments = ["-s", "--max-time", "4", "--data-binary", "x", "http://127.0.0.1:\(server.port)/call"]
            call.standardOutput = output
            call.standardError = FileHandle.nullDevice
            try call.run()
            while call.isRunning { readALittle(for: 0.2) }
            if String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) == "answered\n" { answered += 1 }
        }
        // THEN each is answered
        #expect(answered == 3, "answered \(answered) of 3 calls; heads: \(heads.map { $0.prefix(12) })")
        // AND the streams at once stop one connection short of them all: the fourth was told to
        // come back (503, Retry-After; an EventSource then falls back, the dashboard to polling),
        // or took the slot of one that had nothing to send at that moment (closed)
        let streaming = heads.indices.filter { heads[$0].hasPrefix("HTTP/1.1 200") && !closed.contains($0) }
        #expect(streaming.count <= 3, "\(heads.map { $0.prefix(12) }), closed \(closed)")
    }

    @Test(.timeLimit(.minutes(1)))
    func atTheBoundOnStreamsANewStreamTakesTheSlotOfOneWithNothingToSend() throws {
        // GIVEN a server of 4 connections at most (3 streams), holding 3 event streams with
        // nothing to send (their clients may have gone without a word: a dead peer sends no FIN)
        var limits = HTTPServerLimits()
        limits.connections = 4
        let server = try HTTPServer(host: "127.0.0.1", port: 0, limits: limits, subscribeNewSockets: false, handler: StreamingHandler(path: "/nonexistent"))
        defer { server.stop() }
        func open() throws -> (RawClient, String) {
            let client = try RawClient(port: server.port)
            try client.send("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            return (client, String(decoding: try Self.readHead(client), as: UTF8.self))
        }
        let idle = try (0..<3).map { _ in try open() }
        #expect(idle.allSatisfy { $0.1.hasPrefix("HTTP/1.1 200") })
        usleep(200_000)
        // WHEN a fourth client opens the stream
        let (_, head) = try open()
        // THEN it is answered (200): the stream idle longest made room, and it was closed
        #expect(head.hasPrefix("HTTP/1.1 200"), "\(head.prefix(40))")
        #expect(idle[0].0.receive(timeout: 2) == nil, "the oldest idle stream is still open")
    }

    @Test(.timeLimit(.minutes(1)))
    func anEventStreamThatMissedMoreEventsThanTheLoopKeepsIsCutNotContinuedWithAGap() throws {
        // GIVEN an event stream whose worker read the journal (newest id 0) and is slow to answer
        let entered = DispatchSemaphore(value: 0)
        let go = DispatchSemaphore(value: 0)
        var limits = HTTPServerLimits()
        limits.recentEvents = 100
        let server = try HTTPServer(
            host: "127.0.0.1", port: 0, limits: limits, subscribeNewSockets: false, handler: SlowEventsHandler(entered: entered, go: go))
        defer { server.stop() }
        let client = try RawClient(port: server.port)
        try client.send("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(entered.wait(timeout: .now() + 5) == .success)
        // WHEN 300 durable events are published meanwhile (more than the loop keeps: 100)
        for id in 1...300 { server.publish(StreamEvent(durableID: Int64(id), bytes: Data("id: \(id)\ndata: x\n\n".utf8))) }
        usleep(300_000)
        go.signal()
        // THEN the client gets every one in order, or the stream ends (it reconnects with its
        // Last-Event-ID and the journal gives it the rest): never a stream that goes on past a gap
        var text = ""
        var closed = false
        let deadline = ContinuousClock.now + .seconds(3)
        while ContinuousClock.now < deadline {
            guard let more = client.receive(timeout: 0.5) else {
                closed = true
                break
            }
            text += String(decoding: more, as: UTF8.self)
        }
        let ids = text.split(whereSeparator: \.isNewline).compactMap { line in line.hasPrefix("id: ") ? Int(line.dropFirst(4)) : nil }
        let contiguousFromOne = ids == Array(1...max(1, ids.count)).prefix(ids.count).map { $0 }
        #expect(contiguousFromOne && (ids.count == 300 || closed), "ids \(ids.first ?? -1)...\(ids.last ?? -1) (\(ids.count)), closed: \(closed)")
    }
}

/// A flag one thread sets and another reads.
private final class ManagedAtomicFlag: @unchecked Sendable {
    // @unchecked Sendable: the value is only read and written under `lock`.
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}
