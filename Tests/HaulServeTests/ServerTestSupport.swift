import Foundation
import Haul
import HaulTestSupport

@testable import HaulServe

#if canImport(Glibc)
    import Glibc
#endif

/// An RPCServer on a port of the system's choosing, with its queue in a temporary directory.
/// The test stops it (`defer { fixture.server.stop() }`).
final class ServerFixture {
    let directory: TemporaryDirectory
    let queue: DownloadQueue
    let service: RPCService
    let server: RPCServer

    init(secret: String? = "s", notifyUnauthenticated: Bool = true, limits: HTTPServerLimits = HTTPServerLimits(), allowedOrigins: [String] = []) throws {
        directory = try TemporaryDirectory(prefix: "haul-http-server")
        queue = try DownloadQueue(stateDirectory: directory.file("state"))
        let settings = ServeSettings(root: directory.file("dl"), concurrency: QueueConcurrency(limit: 2), overallLimit: RateLimiter(bytesPerSecond: 0))
        service = RPCService(queue: queue, settings: settings, secret: secret, notify: { _, _ in }, shutdown: { _ in })
        server = try RPCServer(
            service: service, host: "127.0.0.1", port: 0, allowedOrigins: allowedOrigins, notifyUnauthenticated: notifyUnauthenticated, limits: limits)
    }

    var url: String { "http://127.0.0.1:\(server.port)/jsonrpc" }

    static func call(_ method: String, id: Int = 1, token: String? = "s") -> String {
        let params = token.map { #"["token:\#($0)"]"# } ?? "[]"
        return #"{"jsonrpc":"2.0","id":\#(id),"method":"\#(method)","params":\#(params)}"#
    }

    /// A POST of aria2.getVersion by curl (which gives up after `maxTime` seconds): its output and how long it took.
    func curlGetVersion(maxTime: Int = 5) throws -> (output: String, elapsed: Duration) {
        let start = ContinuousClock.now
        let result = try ProcessRunner.run("/usr/bin/curl", ["-s", "--max-time", String(maxTime), "--data-binary", Self.call("aria2.getVersion"), url])
        return (result.stdoutString, ContinuousClock.now - start)
    }
}
