import Foundation
import HaulTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// `haul serve` running in the background on a port of its choosing, and ways to talk to it.
final class ServeProcess {
    let running: RunningHaul
    let port: Int
    let secret: String
    let state: String
    let directory: String

    /// Starts `haul serve --listen 127.0.0.1:0` with a store in `state` and downloads in `directory`
    /// (in `environment` when given, else this process's own).
    /// `withSecret: false`: started without `--secret` (every call is taken; `secret` is sent anyway).
    init(
        state: String, directory: String, secret: String = "s3cret", withSecret: Bool = true, extra: [String] = [],
        environment: [String: String]? = nil
    ) throws {
        self.secret = secret
        self.state = state
        self.directory = directory
        let secretArguments = withSecret ? ["--secret", secret] : []
        running = try RunningHaul(
            ["serve", "--listen", "127.0.0.1:0"] + secretArguments + ["--state", state, "-d", directory] + extra, environment: environment)
        var found: Int?
        let deadline = Date().addingTimeInterval(20)
        while found == nil, Date() < deadline, running.process.isRunning {
            if let range = running.stderr.range(of: #"127\.0\.0\.1:[0-9]+"#, options: .regularExpression) {
                found = Int(running.stderr[range].split(separator: ":")[1])
            } else {
                usleep(20_000)
            }
        }
        guard let found else { throw TestSupportError("haul serve did not say where it listens; stderr: \(running.stderr)") }
        port = found
    }

    var base: String { "http://127.0.0.1:\(port)" }

    /// Stops it with SIGTERM (a checkpoint for every download) and waits for it to exit.
    @discardableResult
    func stop(timeout: Double = 30) throws -> RunningHaul.Ending {
        running.send(SIGTERM)
        return try running.wait(timeout: timeout)
    }

    /// A JSON-RPC call by POST (the token first); the parsed reply.
    func call(_ method: String, _ params: [Any] = []) throws -> [String: Any] {
        let body: [String: Any] = ["jsonrpc": "2.0", "id": "t", "method": method, "params": ["token:" + secret] + params]
        let data = try JSONSerialization.data(withJSONObject: body)
        let reply = try Curl.run(["-s", "--data-binary", String(decoding: data, as: UTF8.self), base + "/jsonrpc"])
        guard let object = try JSONSerialization.jsonObject(with: Data(reply.stdout)) as? [String: Any] else {
            throw TestSupportError("\(method): not a JSON object: \(reply.stdoutString)")
        }
        return object
    }

    /// The result of a call, or an error naming the call and the reply.
    func result(_ method: String, _ params: [Any] = []) throws -> Any {
        let reply = try call(method, params)
        guard let result = reply["result"] else { throw TestSupportError("\(method) failed: \(reply)") }
        return result
    }
}

/// nginx on loopback serving test files written into `work/www` (each at `/NAME`, and rate-limited
/// at `/limited/NAME`).
enum ServedFiles {
    static func start(in work: TemporaryDirectory, _ files: [(name: String, size: Int, seed: UInt64)], limitRate: String) throws -> NginxServer {
        try FileManager.default.createDirectory(atPath: work.file("www"), withIntermediateDirectories: true)
        for file in files { try TestData.writeFile(at: work.file("www/" + file.name), size: file.size, seed: file.seed) }
        return try NginxServer(documentRoot: work.file("www"), limitRate: limitRate)
    }
}

/// curl for the raw HTTP side of the tests (headers a URL session would not let us forge).
enum Curl {
    static func run(_ arguments: [String], timeout: Double = 30) throws -> ProcessResult {
        try ProcessRunner.run("/usr/bin/curl", arguments, timeout: timeout)
    }

    /// Status code and body of a request; `arguments` go before the URL.
    static func status(_ url: String, _ arguments: [String] = []) throws -> (status: Int, body: String) {
        let result = try run(["-s", "-o", "-", "-w", "\n%{http_code}"] + arguments + [url])
        var lines = result.stdoutString.components(separatedBy: "\n")
        let code = Int(lines.removeLast()) ?? 0
        return (code, lines.joined(separator: "\n"))
    }
}
