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
public final class NginxServer: Sendable {
    /// The loopback port nginx listens on.
    public let port: Int
    /// The PID of the nginx master process started by this object.
    public let pid: Int32
    /// The temporary directory holding the generated config, pid file and logs.
    public let directory: String

    /// The certificate and key nginx serves HTTPS with, or `nil` when it serves plain HTTP.
    public let tls: NginxTLS?

    /// `"http://127.0.0.1:PORT"`, or `"https://127.0.0.1:PORT"` when started with ``NginxTLS``;
    /// without a trailing slash.
    public var baseURL: String { "\(tls == nil ? "http" : "https")://127.0.0.1:\(port)" }

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
    /// the same root at that rate. The access log records `$request_uri $status $body_bytes_sent $http_range`
    /// one line per request, unbuffered. nginx runs as the current user (`user root;` is added only for uid 0).
    ///
    /// When `tls` is given, the port speaks HTTPS only (`listen ... ssl`, TLS 1.2 and 1.3) with that
    /// certificate chain and key, and ``baseURL`` starts with `https://`. ``TestCertificates`` makes a
    /// suitable throwaway CA and server certificate for 127.0.0.1.
    ///
    /// The free port is chosen by binding port 0 first; if another process takes it before nginx does,
    /// a new port is tried (a few times). Waits until the port accepts connections, at most 10 s.
    /// - Throws: ``TestSupportError`` when nginx is not installed, the root or a TLS file is missing, or
    ///   nginx does not come up; the message includes nginx's error log.
    public init(documentRoot: String, limitRate: String? = nil, tls: NginxTLS? = nil) throws {
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
                    disabledModules: disabledModules, tls: tls)
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
    public func accessLog() -> [NginxAccessLogEntry] {
        guard let text = try? String(contentsOfFile: accessLogPath, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { NginxAccessLogEntry(line: String($0)) }
    }

    /// The content of nginx's error log so far, for diagnostics.
    public func errorLog() -> String {
        Self.logs(in: directory)
    }

    /// Sends SIGTERM (then SIGKILL after 5 s) to the nginx master PID it started, waits for it to exit,
    /// and removes the temporary directory. Safe to call more than once.
    public func stop() {
        let alreadyStopped = stopped.withLock { stopped in
            defer { stopped = true }
            return stopped
        }
        guard !alreadyStopped else { return }
        Self.terminate(process)
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

    // MARK: - Shutdown

    private static func terminate(_ process: Process) {
        let pid = process.processIdentifier
        guard pid > 0 else { return }
        if process.isRunning {
            // If SIGTERM is not enough, the workers would outlive a SIGKILLed master; note them now.
            let workers = childPIDs(of: pid)
            kill(pid, SIGTERM)
            if !waitForExit(process, timeout: stopTimeout) {
                kill(pid, SIGKILL)
                for worker in workers { kill(worker, SIGKILL) }
            }
        }
        process.waitUntilExit()
    }

    private static func waitForExit(_ process: Process, timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            if Date() >= deadline { return false }
            usleep(10_000)
        }
        return true
    }

    private static func childPIDs(of pid: Int32) -> [Int32] {
        let path = "/proc/\(pid)/task/\(pid)/children"
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: " ").compactMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    // MARK: - Sockets

    private static func loopbackAddress(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(truncatingIfNeeded: port).bigEndian
        address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
        return address
    }

    /// Binds port 0 on 127.0.0.1 and returns the port the kernel picked (then frees it for nginx).
    private static func freeLoopbackPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError.posix("socket()") }
        defer { close(fd) }
        var address = loopbackAddress(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw TestSupportError.posix("bind(127.0.0.1:0)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw TestSupportError.posix("getsockname()") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether a TCP connection to 127.0.0.1:`port` succeeds right now.
    public static func acceptsConnections(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = loopbackAddress(port: port)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return result == 0
    }

    // MARK: - Configuration

    /// A double-quoted nginx string; `$` is left alone because nginx would read it as a variable anyway.
    private static func quoted(_ value: String) -> String {
        "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            + "\""
    }

    static func configuration(
        directory: String, root: String, port: Int, limitRate: String?, disabledModules: Set<String>,
        tls: NginxTLS? = nil
    ) -> String {
        let rootSlash = root.hasSuffix("/") ? root : root + "/"
        let tempPaths = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]
            .filter { $0 == "client_body" || !disabledModules.contains($0) }
            .map { "    \($0)_temp_path \(quoted(directory + "/" + $0));" }
            .joined(separator: "\n")
        let limited =
            limitRate.map {
                """

                        location /limited/ {
                            limit_rate \($0);
                            alias \(quoted(rootSlash));
                        }
                """
            } ?? ""
        let listen: String
        if let tls {
            listen = """
                listen 127.0.0.1:\(port) ssl;
                        ssl_certificate \(quoted(tls.certificatePath));
                        ssl_certificate_key \(quoted(tls.keyPath));
                        ssl_protocols TLSv1.2 TLSv1.3;
                        ssl_session_cache off;
                """
        } else {
            listen = "listen 127.0.0.1:\(port);"
        }
        return """
            daemon off;
            master_process on;
            worker_processes 1;
            \(getuid() == 0 ? "user root;" : "")
            pid \(quoted(directory + "/nginx.pid"));
            lock_file \(quoted(directory + "/nginx.lock"));
            error_log \(quoted(directory + "/error.log")) notice;

            events {
                worker_connections 1024;
            }

            http {
                default_type application/octet-stream;
                log_format haul_test '$request_uri $status $body_bytes_sent $http_range';
                access_log \(quoted(directory + "/access.log")) haul_test;
            \(tempPaths)
                sendfile on;
                tcp_nopush on;
                etag on;
                keepalive_timeout 65;

                server {
                    \(listen)
                    server_name localhost;
                    root \(quoted(root));
                    location / {
                    }\(limited)
                }
            }

            """
    }
}

/// The certificate chain and private key an ``NginxServer`` serves HTTPS with.
public struct NginxTLS: Sendable, Equatable {
    /// A PEM file with the server certificate, optionally followed by intermediate certificates.
    public let certificatePath: String
    /// A PEM file with the server certificate's private key, unencrypted.
    public let keyPath: String

    /// Creates a TLS configuration from two PEM files; they are checked when the server starts.
    public init(certificatePath: String, keyPath: String) {
        self.certificatePath = certificatePath
        self.keyPath = keyPath
    }

    /// The same files by absolute path (nginx resolves relative ones against its prefix, not the
    /// test's working directory); throws when either is not a readable file.
    func absolute() throws -> NginxTLS {
        let paths = [certificatePath, keyPath].map { URL(fileURLWithPath: $0).standardizedFileURL.path }
        for path in paths where !FileManager.default.isReadableFile(atPath: path) {
            throw TestSupportError("nginx TLS file \(path) does not exist or is not readable")
        }
        return NginxTLS(certificatePath: paths[0], keyPath: paths[1])
    }
}

/// One line of the access log written by ``NginxServer``.
public struct NginxAccessLogEntry: Sendable, Equatable {
    /// The request URI as sent, with its query string (`$request_uri`).
    public let uri: String
    /// The response status code.
    public let status: Int
    /// Body bytes sent, not counting headers (`$body_bytes_sent`).
    public let bodyBytesSent: Int
    /// The request's `Range` header, or `nil` when it had none.
    public let range: String?

    /// Creates an entry from its fields.
    public init(uri: String, status: Int, bodyBytesSent: Int, range: String?) {
        self.uri = uri
        self.status = status
        self.bodyBytesSent = bodyBytesSent
        self.range = range
    }

    /// Parses a line in the `haul_test` format: `$request_uri $status $body_bytes_sent $http_range`.
    /// The Range value may itself contain spaces (`bytes=0-1, 5-9`); nginx writes `-` when it is absent.
    init?(line: String) {
        let fields = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false)
        guard fields.count == 4, let status = Int(fields[1]), let bytes = Int(fields[2]) else { return nil }
        self.init(
            uri: String(fields[0]), status: status, bodyBytesSent: bytes,
            range: fields[3] == "-" ? nil : String(fields[3]))
    }
}
