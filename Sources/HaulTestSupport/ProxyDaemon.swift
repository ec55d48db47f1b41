import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

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
                // A test abandoned at its time limit keeps its proxy: stopped when the process exits.
                ServersLeftAtExit.note(process.pid) { process.terminate() }
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
        ServersLeftAtExit.forget(process.pid)
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
