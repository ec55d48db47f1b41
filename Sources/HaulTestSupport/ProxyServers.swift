import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A real SOCKS5 proxy, Debian's `microsocks`, on a free loopback port, for tests.
///
/// Its outgoing connections leave from `outgoingAddress`, another loopback address, so a server's
/// log (``NginxAccessLogEntry/clientAddress``) proves whether a request came through it. It logs
/// each connection with the target as the client named it: a host name when the client left the
/// resolution to the proxy (`socks5h://`), an address when it resolved the name itself (`socks5://`).
public final class SocksProxy: Sendable {
    private let daemon: ProxyDaemon
    /// The loopback port it listens on (on 127.0.0.1).
    public var port: Int { daemon.port }
    /// The PID of the microsocks process this object started.
    public var pid: Int32 { daemon.pid }
    /// The address its connections to servers come from.
    public let outgoingAddress: String

    /// Starts `microsocks -i 127.0.0.1 -p PORT -b OUTGOING [-u USER -P PASSWORD]` on a free port and
    /// waits until it accepts connections. With `user` and `password`, clients must log in.
    /// - Throws: ``TestSupportError`` when microsocks is not installed or does not come up.
    public init(outgoingAddress: String = "127.0.0.2", user: String? = nil, password: String? = nil) throws {
        self.outgoingAddress = outgoingAddress
        let executable = try ProxyDaemon.find("microsocks", package: "microsocks")
        let login = user.map { ["-u", $0, "-P", password ?? ""] } ?? []
        daemon = try ProxyDaemon(name: "microsocks", executable: executable) { port, _ in
            (["-i", "127.0.0.1", "-p", String(port), "-b", outgoingAddress] + login, nil)
        }
    }

    deinit {
        stop()
    }

    /// `SCHEME://[USER:PASSWORD@]127.0.0.1:PORT`, for `--proxy` or `all_proxy`.
    public func url(scheme: String = "socks5h", user: String? = nil, password: String? = nil) -> String {
        ProxyDaemon.url(scheme: scheme, user: user, password: password, port: port)
    }

    /// The targets of the connections so far, as clients named them (`localhost:8080`,
    /// `127.0.0.1:8080`): microsocks logs `client[N] ADDRESS: connected to HOST:PORT`.
    public func connectedTargets() -> [String] {
        daemon.log().split(separator: "\n").compactMap { line in
            line.range(of: ": connected to ").map { String(line[$0.upperBound...]) }
        }
    }

    /// Everything microsocks printed, for diagnostics.
    public func log() -> String { daemon.log() }

    /// Stops the process it started (SIGTERM, then SIGKILL) and removes its directory. Idempotent.
    public func stop() { daemon.stop() }
}

/// A real HTTP proxy, Debian's `tinyproxy`, on a free loopback port, for tests: it forwards plain
/// http requests and tunnels https ones (`CONNECT`).
///
/// Its outgoing connections leave from `outgoingAddress`, another loopback address, so a server's
/// log proves whether a request came through it; its own log lists each request it received.
public final class HTTPProxy: Sendable {
    private let daemon: ProxyDaemon
    /// The loopback port it listens on (on 127.0.0.1).
    public var port: Int { daemon.port }
    /// The PID of the tinyproxy process this object started.
    public var pid: Int32 { daemon.pid }
    /// The address its connections to servers come from.
    public let outgoingAddress: String

    /// Starts `tinyproxy -d -c FILE` with a configuration in a fresh temporary directory (listen on
    /// 127.0.0.1 at a free port, connect from `outgoingAddress`, allow only 127.0.0.1, log every
    /// request) and waits until it accepts connections. With `user` and `password`, clients must
    /// send them (`Proxy-Authorization: Basic`).
    /// - Throws: ``TestSupportError`` when tinyproxy is not installed or does not come up.
    public init(outgoingAddress: String = "127.0.0.3", user: String? = nil, password: String? = nil) throws {
        self.outgoingAddress = outgoingAddress
        let executable = try ProxyDaemon.find("tinyproxy", package: "tinyproxy")
        daemon = try ProxyDaemon(name: "tinyproxy", executable: executable) { port, directory in
            let login = user.map { "BasicAuth \($0) \(password ?? "")\n" } ?? ""
            let config = """
                Port \(port)
                Listen 127.0.0.1
                Bind \(outgoingAddress)
                Timeout 60
                Allow 127.0.0.1
                MaxClients 64
                LogLevel Connect
                \(login)
                """
            let path = directory + "/tinyproxy.conf"
            return (["-d", "-c", path], (path, config))
        }
    }

    deinit {
        stop()
    }

    /// `http://[USER:PASSWORD@]127.0.0.1:PORT`, for `--proxy` or `http_proxy`.
    public func url(user: String? = nil, password: String? = nil) -> String {
        ProxyDaemon.url(scheme: "http", user: user, password: password, port: port)
    }

    /// The request lines received so far (`GET http://127.0.0.1:8080/f HTTP/1.1`,
    /// `CONNECT 127.0.0.1:8443 HTTP/1.1`): tinyproxy logs `Request (file descriptor N): LINE`.
    public func requestLines() -> [String] {
        daemon.log().split(separator: "\n").compactMap { line in
            guard line.contains("Request (file descriptor") else { return nil }
            return line.range(of: "): ").map { String(line[$0.upperBound...]) }
        }
    }

    /// Everything tinyproxy logged, for diagnostics.
    public func log() -> String { daemon.log() }

    /// Stops the process it started (SIGTERM, then SIGKILL) and removes its directory. Idempotent.
    public func stop() { daemon.stop() }
}

/// TLS in front of another loopback proxy, for tests of `https://` proxies (TLS from the client to
/// the proxy): a small Python program (`python3`'s ssl module) that terminates TLS with the given
/// certificate on a free port and passes the bytes to `targetPort` (e.g. an ``HTTPProxy``'s).
public final class TLSProxyFront: Sendable {
    private let daemon: ProxyDaemon
    /// The loopback port it listens on (on 127.0.0.1).
    public var port: Int { daemon.port }

    /// - Throws: ``TestSupportError`` when python3 is not installed or the program does not come up.
    public init(certificatePath: String, keyPath: String, targetPort: Int) throws {
        let executable = try ProxyDaemon.find("python3", package: "python3")
        daemon = try ProxyDaemon(name: "tls-front", executable: executable) { port, directory in
            let path = directory + "/tls_front.py"
            return ([path, certificatePath, keyPath, String(port), String(targetPort)], (path, Self.program))
        }
    }

    deinit {
        daemon.stop()
    }

    /// `https://[USER:PASSWORD@]127.0.0.1:PORT`, for `--proxy` or `https_proxy`.
    public func url(user: String? = nil, password: String? = nil) -> String {
        ProxyDaemon.url(scheme: "https", user: user, password: password, port: port)
    }

    /// Stops the process it started and removes its directory. Idempotent.
    public func stop() { daemon.stop() }

    /// One thread per connection, each moving bytes both ways with select (an SSL socket is never
    /// read and written from two threads at once).
    static let program = """
        import select, socket, ssl, sys, threading
        cert, key, port, target = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(64)

        def serve(client):
            try:
                tls = context.wrap_socket(client, server_side=True)
                upstream = socket.create_connection(("127.0.0.1", target))
            except (OSError, ssl.SSLError):
                client.close()
                return
            try:
                while True:
                    readable = [tls] if tls.pending() else select.select([tls, upstream], [], [])[0]
                    for source in readable:
                        data = source.recv(65536)
                        if not data:
                            return
                        (upstream if source is tls else tls).sendall(data)
            except (OSError, ssl.SSLError):
                pass
            finally:
                tls.close()
                upstream.close()

        while True:
            connection, _ = listener.accept()
            threading.Thread(target=serve, args=(connection,), daemon=True).start()

        """
}

/// One proxy process on a free loopback port: started with its output in a temporary directory,
/// stopped by its PID only.
final class ProxyDaemon: Sendable {
    let port: Int
    let directory: String
    private let process: SpawnedProcess
    private let stopped = Mutex(false)

    var pid: Int32 { process.pid }

    static let startTimeout: Double = 10
    static let portAttempts = 5

    /// Starts `executable` with the arguments (and a configuration file to write first) that
    /// `arguments` gives for a port and the temporary directory; tries another port when the
    /// process exits at once (another process took the port first).
    init(
        name: String, executable: String,
        arguments: (_ port: Int, _ directory: String) -> (arguments: [String], file: (path: String, contents: String)?)
    ) throws {
        var lastLog = ""
        for _ in 1...Self.portAttempts {
            let directory = try TemporaryDirectory.makeUnique(prefix: "haul-\(name)")
            let port = try NginxServer.freeLoopbackPort()
            let (list, file) = arguments(port, directory)
            let process: SpawnedProcess
            do {
                if let file { try file.contents.write(toFile: file.path, atomically: true, encoding: .utf8) }
                process = try SpawnedProcess(executable, list, output: directory + "/output.log")
            } catch {
                try? FileManager.default.removeItem(atPath: directory)
                throw TestSupportError("cannot start \(executable): \(error)")
            }
            let deadline = Date().addingTimeInterval(Self.startTimeout)
            while process.isRunning, !NginxServer.acceptsConnections(port: port), Date() < deadline { usleep(10_000) }
            // Still running after accepting a connection: it is ours on that port, not a process that
            // lost the port and exited.
            usleep(50_000)
            if process.isRunning, NginxServer.acceptsConnections(port: port) {
                self.port = port
                self.directory = directory
                self.process = process
                return
            }
            lastLog = (try? String(contentsOfFile: directory + "/output.log", encoding: .utf8)) ?? ""
            process.terminate()
            try? FileManager.default.removeItem(atPath: directory)
        }
        throw TestSupportError("\(name) did not start on a free loopback port in \(Self.portAttempts) attempts:\n\(lastLog)")
    }

    deinit {
        stop()
    }

    /// The Debian executable, or an error that says which package to install.
    static func find(_ name: String, package: String) throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let candidates = path.split(separator: ":").map { "\($0)/\(name)" } + ["/usr/bin/\(name)", "/usr/sbin/\(name)"]
        if let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) { return found }
        throw TestSupportError("\(name) is not installed; install it with `apt-get install \(package)` (.ci/run does this)")
    }

    static func url(scheme: String, user: String?, password: String?, port: Int) -> String {
        let login = user.map { "\($0):\(password ?? "")@" } ?? ""
        return "\(scheme)://\(login)127.0.0.1:\(port)"
    }

    func log() -> String {
        (try? String(contentsOfFile: directory + "/output.log", encoding: .utf8)) ?? ""
    }

    /// Stops the process and removes its directory. Idempotent.
    func stop() {
        let alreadyStopped = stopped.withLock { stopped in
            defer { stopped = true }
            return stopped
        }
        guard !alreadyStopped else { return }
        process.terminate()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// A child process started with `posix_spawn`, signalled by its PID only and reaped once.
///
/// Not `Process`: a child inherits the signal mask of the thread that starts it, test threads
/// block SIGTERM, and unlike nginx these proxies never unblock it themselves, so they could only
/// be killed. Here the child starts with no signal blocked and SIGTERM at its default.
final class SpawnedProcess: Sendable {
    let pid: pid_t
    /// Whether the process has been reaped; its PID must not be signalled after that.
    private let reaped = Mutex(false)

    static let stopTimeout: Double = 5

    /// Starts `executable` with stdin from /dev/null and stdout and stderr appended to `output`.
    init(_ executable: String, _ arguments: [String], output: String) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let code = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        guard code == 0 else { throw TestSupportError.posix("posix_spawn \(executable)", errno: code) }
        self.pid = pid
    }

    deinit {
        terminate()
    }

    /// Whether the process is alive; reaps it once it has exited.
    var isRunning: Bool {
        reaped.withLock { reaped in
            guard !reaped else { return false }
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid || (result < 0 && errno == ECHILD) { reaped = true }
            return !reaped
        }
    }

    /// SIGTERM, then SIGKILL if it is still there after `stopTimeout`; returns once it is reaped.
    func terminate() {
        guard isRunning else { return }
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(Self.stopTimeout)
        while isRunning, Date() < deadline { usleep(10_000) }
        guard isRunning else { return }
        kill(pid, SIGKILL)
        while isRunning { usleep(10_000) }
    }
}
