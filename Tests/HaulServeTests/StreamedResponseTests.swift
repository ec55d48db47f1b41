import Foundation
import HaulTestSupport
import Testing

@testable import HaulServe

#if canImport(Glibc)
    import Glibc
#endif

/// A handler with a file route (`/file`: the file at `path`, streamed), an event stream
/// (`/events`) and a call answered by a worker (`POST /call`). The file is opened once and sent
/// as the file route sends it (`FileBody`); `StreamAttackTests` serves files with it too.
struct StreamingHandler: HTTPServerHandler {
    let path: String

    func route(_ head: HTTPRequestHead) -> HTTPRoute {
        head.path == "/call" ? .read(limit: 1024, tooLarge: HTTPResponse.text(413, "too large")) : .stream
    }

    func respond(to head: HTTPRequestHead, body: Data) -> HTTPResponse {
        HTTPResponse.text(200, "answered")
    }

    func message(_ payload: Data) -> WebSocketReply {
        WebSocketReply(message: nil, authenticated: false)
    }

    func stream(to head: HTTPRequestHead) -> HTTPStreamReply {
        if head.path == "/events" {
            return .events(HTTPResponse(status: 200, headers: [HTTPHeader(name: "Content-Type", value: "text/event-stream")]), initial: Data(), after: 0)
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        var info = stat()
        guard fd >= 0, fstat(fd, &info) == 0 else { return .whole(HTTPResponse.text(404, "no file")) }
        return .file(HTTPResponse(status: 200, announcedLength: Int(info.st_size)), FileBody(fd: fd, offset: 0, length: Int64(info.st_size)))
    }
}

/// A server of `StreamingHandler` on a sparse 1 GiB file (`/file`) under `limits`; the file is
/// removed with `directory`.
struct SparseFileServer {
    let directory: TemporaryDirectory
    let server: HTTPServer

    init(prefix: String, limits: HTTPServerLimits) throws {
        directory = try TemporaryDirectory(prefix: prefix)
        let path = directory.file("big.bin")
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        defer { close(fd) }
        try #require(ftruncate(fd, 1 << 30) == 0)
        server = try HTTPServer(host: "127.0.0.1", port: 0, limits: limits, subscribeNewSockets: false, handler: StreamingHandler(path: path))
    }
}

@Suite("haul serve: streamed answers", .serialized)
struct StreamedResponseTests {
    @Test(.timeLimit(.minutes(1)))
    func slowDownloadsOfALargeFileHoldNoWorker() throws {
        // GIVEN a server with two workers and a sparse 1 GiB file
        var limits = HTTPServerLimits()
        limits.workers = 2
        let sparse = try SparseFileServer(prefix: "haul-stream-file", limits: limits)
        let server = sparse.server
        defer { server.stop() }
        // WHEN six clients download it at 256 KB/s each (about an hour for the whole)
        let downloads = try (0..<6).map { _ in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            process.arguments = ["-s", "-o", "/dev/null", "--limit-rate", "256k", "--max-time", "30", "http://127.0.0.1:\(server.port)/file"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            return process
        }
        defer {
            for download in downloads where download.isRunning {
                kill(download.processIdentifier, SIGKILL)
                download.waitUntilExit()
            }
        }
        usleep(1_000_000)
        let running = downloads.filter { $0.isRunning }.count
        #expect(running == 6)
        // THEN a call that needs a worker is still answered at once, several times over
        for _ in 0..<4 {
            let start = ContinuousClock.now
            let answer = try ProcessRunner.run("/usr/bin/curl", ["-s", "--max-time", "5", "--data-binary", "x", "http://127.0.0.1:\(server.port)/call"])
            #expect(answer.stdoutString == "answered\n")
            #expect(ContinuousClock.now - start < .seconds(2))
        }
        let stillRunning = downloads.filter { $0.isRunning }.count
        #expect(stillRunning == 6)
    }

    @Test(.timeLimit(.minutes(1)))
    func aFileIsSentWhole() throws {
        // GIVEN a 5 MiB file of varied bytes
        let directory = try TemporaryDirectory(prefix: "haul-stream-file")
        let path = directory.file("a.bin")
        try TestData.writeFile(at: path, size: 5 << 20, seed: 7)
        let server = try HTTPServer(host: "127.0.0.1", port: 0, subscribeNewSockets: false, handler: StreamingHandler(path: path))
        defer { server.stop() }
        // WHEN it is fetched twice over one connection THEN both copies are exact
        let result = try ProcessRunner.run(
            "/usr/bin/curl",
            [
                "-s", "--max-time", "20", "-o", directory.file("1"), "http://127.0.0.1:\(server.port)/file", "-o", directory.file("2"),
                "http://127.0.0.1:\(server.port)/file",
            ])
        #expect(result.status == 0)
        let original = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.file("1"))) == original)
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.file("2"))) == original)
    }

    @Test(.timeLimit(.minutes(1)))
    func anEventStreamThatIsNotReadIsCutPastItsBound() throws {
        // GIVEN an event stream whose client never reads (a 4 KiB receive buffer), bound 256 KiB
        var limits = HTTPServerLimits()
        limits.streamBacklogBytes = 256 << 10
        let server = try HTTPServer(host: "127.0.0.1", port: 0, limits: limits, subscribeNewSockets: false, handler: StreamingHandler(path: "/nonexistent"))
        defer { server.stop() }
        let idle = try RawClient(port: server.port, receiveBuffer: 4096)
        try idle.send("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let reader = try RawClient(port: server.port)
        try reader.send("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        _ = try reader.read(timeout: 5) { bytes in RawClient.range(of: Array("\r\n\r\n".utf8), in: bytes).map { $0 + 4 } }
        usleep(200_000)
        // WHEN 32 MiB of events are published, while the other client reads them all
        let event = Data(("data: " + String(repeating: "x", count: 1018) + "\n\n").utf8)
        var received = 0
        let deadline = ContinuousClock.now + .seconds(30)
        for batch in 0..<256 {
            // In batches of 128 KiB, each read by the reader before the next goes out.
            for index in 0..<128 { server.publish(StreamEvent(durableID: Int64(batch * 128 + index + 1), bytes: event)) }
            while received < (batch + 1) * 128 * event.count, ContinuousClock.now < deadline {
                guard let more = reader.receive(timeout: 1) else { break }
                received += more.count
            }
        }
        // THEN the reader got every byte, and the one that did not read was closed after far less
        #expect(received == 32_768 * event.count)
        var idleReceived = 0
        var closed = false
        while ContinuousClock.now < deadline {
            guard let more = idle.receive(timeout: 1) else {
                closed = true
                break
            }
            idleReceived += more.count
        }
        #expect(closed)
        #expect(idleReceived < 16 << 20, "the idle client got \(idleReceived) bytes")
    }
}
