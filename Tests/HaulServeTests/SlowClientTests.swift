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
    @Test(.timeLimit(.minutes(1)))
    func notificationsToAClientThatDoesNotReadNeverBlockTheSender() throws {
        let directory = try TemporaryDirectory(prefix: "haul-slow-client")
        let queue = try DownloadQueue(stateDirectory: directory.file("state"))
        let settings = ServeSettings(root: directory.file("dl"), concurrency: QueueConcurrency(limit: 2), overallLimit: RateLimiter(bytesPerSecond: 0))
        let service = RPCService(queue: queue, settings: settings, secret: "s", notify: { _, _ in }, shutdown: { _ in })
        let server = try RPCServer(service: service, host: "127.0.0.1", port: 0, allowedOrigins: [])
        defer { server.stop() }
        // GIVEN a client that authenticated its socket (a silent call) and then stopped reading
        let client = try RawClient(port: server.port, receiveBuffer: 4096)
        try client.handshake(port: server.port)
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
        shutdown(client.fd, Int32(SHUT_RDWR))
    }
}
