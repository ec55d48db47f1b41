import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A real nginx serving a directory on a free loopback port, for tests and benchmarks against a
/// production HTTP server (sendfile, ETag, Range, rate limiting).
///
/// Everything nginx writes (config, pid file, logs, temp paths) lives in a fresh temporary
/// directory. Only the master process this object started is ever signalled, by its PID.
package final class NginxServer: Sendable {
    /// The loopback port nginx listens on.
    package let port: Int
    /// The PID of the nginx master process started by this object.
    package let pid: Int32
    /// The temporary directory holding the generated config, pid file and logs.
    package let directory: String

    /// The certificate and key nginx serves HTTPS with, or `nil` when it serves plain HTTP.
    package let tls: NginxTLS?

    /// `"http://127.0.0.1:PORT"`, or `"https://127.0.0.1:PORT"` when started with ``NginxTLS``;
    /// without a trailing slash.
    package var baseURL: String { "\(tls == nil ? "http" : "https")://127.0.0.1:\(port)" }

    // Process is documented thread-safe in swift-corelibs-foundation (it is `@unchecked Sendable`);
    // after init this object only reads `isRunning` and signals the PID.
    private let process: Process
    private let accessLogPath: String
    private let stopped = Mutex(false)

    /// How long `init` waits for nginx to accept connections.
    static let startTimeout: Double = 10
    /// How long `stop()` waits after SIGTERM before sending SIGKILL.
    static let stopTimeout: Double = 5
    /// How many times `init` picks a new port when another process took the chosen one first.
    static let portAttempts = 5

    /// Starts `nginx` (found in PATH or /usr/sbin/nginx) serving `documentRoot` on 127.0.0.1 at a free port.
    ///
    /// The generated config has `daemon off; master_process on; worker_processes 1;`, the pid file and the
    /// error and access logs inside a fresh temporary directory, `sendfile on; etag on;`, and, when
    /// `limitRate` is given (an nginx size such as `"512k"` or `"2m"`), a `location /limited/` that serves
    /// the same root at that rate, and `/oneconn/` at that rate to one connection per client at a
    /// time (`limit_conn 1`: a second gets 503). The access log records `$remote_addr $request_uri $status $body_bytes_sent
    /// $http_range` one line per request, unbuffered. nginx runs as the current user (`user root;` is added only for uid 0).
    ///
    /// When `tls` is given, the port speaks HTTPS only (`listen ... ssl`, TLS 1.2 and 1.3) with that
    /// certificate chain and key, and ``baseURL`` starts with `https://`. ``TestCertificates`` makes a
    /// suitable throwaway CA and server certificate for 127.0.0.1.
    ///
    /// The free port is chosen by binding port 0 first; if another process takes it before nginx does,
    /// a new port is tried (a few times). Waits until the port accepts connections, at most 10 s.
    /// - Throws: ``TestSupportError`` when nginx is not installed, the root or a TLS file is missing, or
    ///   nginx does not come up; the message includes nginx's error log.
    /// `redirects`: exact paths answered with `302` to the given absolute URL (no body).
    /// `headers`: exact paths served with these extra response headers (`add_header … always`).
    package init(
        documentRoot: String, limitRate: String? = nil, tls: NginxTLS? = nil, redirects: [String: String] = [:],
        headers: [String: [String: String]] = [:]
    ) throws {
        let executable = try Self.findExecutable()
        let root = URL(fileURLWithPath: documentRoot).standardizedFileURL.path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory), isDirectory.boolValue
        else {
            throw TestSupportError("nginx document root \(root) does not exist or is not a directory")
        }
        if let limitRate, limitRate.range(of: #"^[0-9]+[kKmMgG]?$"#, options: .regularExpression) == nil {
            throw TestSupportError("limitRate \"\(limitRate)\" is not an nginx size such as 512k or 2m")
        }
        let tls = try tls.map { try $0.absolute() }
        let disabledModules = Self.disabledModules(of: executable)

        var lastFailure = ""
        for attempt in 1...Self.portAttempts {
            let directory = try TemporaryDirectory.makeUnique(prefix: "haul-nginx")
            let outcome: StartOutcome
            let process: Process
            let port: Int
            do {
                port = try Self.freeLoopbackPort()
                let config = Self.configuration(
                    directory: directory, root: root, port: port, limitRate: limitRate,
                    disabledModules: disabledModules, tls: tls, redirects: redirects, headers: headers)
                let configPath = directory + "/nginx.conf"
                try config.write(toFile: configPath, atomically: true, encoding: .utf8)
                process = try Self.launch(executable, directory: directory, configPath: configPath)
                outcome = Self.waitUntilReady(process: process, port: port, directory: directory)
                if case .ready = outcome {} else { Self.terminate(process) }
            } catch {
                try? FileManager.default.removeItem(atPath: directory)
                throw error
            }
            switch outcome {
            case .ready:
                self.process = process
                self.pid = process.processIdentifier
                // Stopped when the test process exits, should this object never be released.
                ServersLeftAtExit.note(process.processIdentifier) { Self.terminate(process) }
                self.port = port
                self.tls = tls
                self.directory = directory
                self.accessLogPath = directory + "/access.log"
                return
            case .exited(let log):
                try? FileManager.default.removeItem(atPath: directory)
                lastFailure = log
                if log.contains("Address already in use") && attempt < Self.portAttempts { continue }
                throw TestSupportError("nginx exited during start-up on port \(port):\n\(log)")
            case .timedOut(let log):
                try? FileManager.default.removeItem(atPath: directory)
                throw TestSupportError(
                    "nginx did not accept connections on 127.0.0.1:\(port) within \(Self.startTimeout) s:\n\(log)")
            }
        }
        throw TestSupportError(
            "nginx could not bind a free port in \(Self.portAttempts) attempts:\n\(lastFailure)")
    }

    deinit {
        stop()
    }

    /// Parsed access log lines so far. nginx writes a line when a request ends, unbuffered.
    package func accessLog() -> [NginxAccessLogEntry] {
        guard let text = try? String(contentsOfFile: accessLogPath, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { NginxAccessLogEntry(line: String($0)) }
    }

    /// The content of nginx's error log so far, for diagnostics.
    package func errorLog() -> String {
        Self.logs(in: directory)
    }

    /// Sends SIGTERM (then SIGKILL after 5 s) to the nginx master PID it started, waits for it to exit,
    /// and removes the temporary directory. Safe to call more than once.
    package func stop() {
        let alreadyStopped = stopped.withLock { stopped in
            defer { stopped = true }
            return stopped
        }
        guard !alreadyStopped else { return }
        Self.terminate(process)
        ServersLeftAtExit.forget(pid)
        try? FileManager.default.removeItem(atPath: directory)
    }

    // MARK: - Start-up

    private enum StartOutcome {
        case ready
        case exited(log: String)
        case timedOut(log: String)
    }

    private static func findExecutable() throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let candidates = path.split(separator: ":").map { "\($0)/nginx" } + ["/usr/sbin/nginx"]
        if let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) {
            return found
        }
        throw TestSupportError(
            "nginx is not installed (not in PATH nor /usr/sbin/nginx); install it with "
                + "`apt-get install nginx-light` (.ci/run does this)")
    }

    /// Modules compiled out of this nginx (`--without-http_X_module`), whose directives must not appear.
    private static func disabledModules(of executable: String) -> Set<String> {
        guard let result = try? ProcessRunner.run(executable, ["-V"], timeout: 10) else { return [] }
        let text = result.stderr + result.stdoutString
        var disabled = Set<String>()
        for word in text.split(whereSeparator: { $0 == " " || $0 == "\n" })
        where word.hasPrefix("--without-http_") && word.hasSuffix("_module") {
            disabled.insert(String(word.dropFirst("--without-http_".count).dropLast("_module".count)))
        }
        return disabled
    }

    private static func launch(_ executable: String, directory: String, configPath: String) throws -> Process {
        let stderrPath = directory + "/stderr.log"
        guard FileManager.default.createFile(atPath: stderrPath, contents: nil),
            let stderrHandle = FileHandle(forWritingAtPath: stderrPath)
        else {
            throw TestSupportError("cannot create \(stderrPath)")
        }
        defer { try? stderrHandle.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["-p", directory + "/", "-c", configPath, "-e", directory + "/error.log"]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = stderrHandle
        process.standardError = stderrHandle
        do {
            try process.run()
        } catch {
            throw TestSupportError("cannot start \(executable): \(error)")
        }
        return process
    }

    /// Ready means: nginx wrote its pid file (it does so after binding the listen socket) and the port
    /// accepts connections. Checking the pid file too rules out a connection to some other process
    /// that won the race for the port.
    private static func waitUntilReady(process: Process, port: Int, directory: String) -> StartOutcome {
        let deadline = Date().addingTimeInterval(startTimeout)
        let pidFile = directory + "/nginx.pid"
        let expectedPID = String(process.processIdentifier)
        while Date() < deadline {
            if !process.isRunning {
                return .exited(log: logs(in: directory))
            }
            let written = (try? String(contentsOfFile: pidFile, encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
            if written == expectedPID && acceptsConnections(port: port) {
                return .ready
            }
            usleep(20_000)
        }
        return .timedOut(log: logs(in: directory))
    }

    private static func logs(in directory: String) -> String {
        ["error.log", "stderr.log"]
            .compactMap { try? String(contentsOfFile: directory + "/" + $0, encoding: .utf8) }
            .filter { !$0.isEmpty }
            .joined(separator: "\n")
    }
}
