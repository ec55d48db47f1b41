import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A private PostgreSQL cluster for tests and benchmarks: `initdb` into a fresh temporary
/// directory, a server on a free loopback port, stopped by its PID.
///
/// Debian's server binaries (`/usr/lib/postgresql/<version>/bin`, the newest found) run as the
/// `postgres` user when the tests run as root (the server refuses to run as root), through
/// `runuser`; the data directory is then handed to that user. Authentication is `trust` on
/// loopback, for the superuser `haul`. Durability is off (`fsync=off`): a test cluster never
/// survives a power cut, and tests stay fast. Only the postmaster this object started is ever
/// signalled, by the PID in its `postmaster.pid`.
package final class PostgresCluster: Sendable {
    /// The loopback port the server listens on.
    package let port: Int
    /// The temporary directory: `data/`, the server log, the socket.
    package let directory: String
    private let binaries: String
    private let pid = Mutex<Int32?>(nil)

    /// Starts a new cluster; throws ``TestSupportError`` when PostgreSQL is not installed or does not start.
    package init() throws {
        binaries = try Self.findBinaries()
        directory = try TemporaryDirectory.makeUnique(prefix: "haul-pg")
        port = try NginxServer.freeLoopbackPort()
        do {
            try Self.handOver(directory)
            try runAsServerUser(binaries + "/initdb", ["-D", dataDirectory, "-U", "haul", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"])
            try start()
        } catch {
            stop()
            throw error
        }
    }

    deinit {
        stop()
    }

    /// `postgresql://haul@127.0.0.1:PORT/DB`.
    package func uri(database: String = "postgres") -> String {
        "postgresql://haul@127.0.0.1:\(port)/\(database)"
    }

    /// The server's PID while it runs.
    package var serverPID: Int32? { pid.withLock { $0 } }

    var dataDirectory: String { directory + "/data" }

    /// Creates an empty database `name` and returns its URI.
    package func createDatabase(_ name: String) throws -> String {
        try psql("CREATE DATABASE \"\(name)\"")
        return uri(database: name)
    }

    /// Runs SQL through `psql` on `database` and returns what it printed (unaligned, tuples only).
    @discardableResult
    package func psql(_ sql: String, database: String = "postgres") throws -> String {
        let result = try ProcessRunner.run(
            binaries + "/psql", ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", uri(database: database), "-c", sql], timeout: 30)
        guard result.status == 0 else { throw TestSupportError("psql failed (\(result.status)): \(result.stderr)") }
        return String(decoding: result.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Starts the server (again) on the same port and data, and waits until it accepts connections.
    package func start() throws {
        let options = "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        try runAsServerUser(binaries + "/pg_ctl", ["-D", dataDirectory, "-l", directory + "/server.log", "-w", "-t", "30", "-o", options, "start"])
        let text = (try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8)) ?? ""
        guard let first = text.split(separator: "\n").first, let started = Int32(first) else {
            throw TestSupportError("PostgreSQL started but wrote no postmaster.pid; log: \(log())")
        }
        pid.withLock { $0 = started }
        // `pg_ctl` detaches the server: one a test abandoned at its time limit would keep running
        // after the test process, so it is stopped when the process exits.
        ServersLeftAtExit.note(started) { Self.stopServer(pid: started) }
    }

    /// Stops the server by its PID (SIGINT, PostgreSQL's fast shutdown: clients are disconnected),
    /// waiting for it to exit; SIGKILL after 10 s.
    package func stopServer() {
        guard
            let running = pid.withLock({ value -> Int32? in
                defer { value = nil }
                return value
            })
        else { return }
        Self.stopServer(pid: running)
        ServersLeftAtExit.forget(running)
    }

    private static func stopServer(pid running: Int32) {
        kill(running, SIGINT)
        let deadline = Date().addingTimeInterval(10)
        while kill(running, 0) == 0, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if kill(running, 0) == 0 {
            kill(running, SIGKILL)
            while kill(running, 0) == 0 { Thread.sleep(forTimeInterval: 0.05) }
        }
    }

    /// Stops the server and removes the directory. Safe to call more than once.
    package func stop() {
        stopServer()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The server log so far, for diagnostics.
    package func log() -> String {
        (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? ""
    }

    /// Runs a PostgreSQL program to completion, as the `postgres` user when this process is root.
    ///
    /// Spawned directly, every descriptor above standard error closed, not through `Process`:
    /// `pg_ctl start` leaves the server running in the background, and a server that inherited
    /// Foundation's termination socket would keep `Process` from ever noticing that pg_ctl exited.
    private func runAsServerUser(_ executable: String, _ arguments: [String]) throws {
        let program = getuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--", executable] + arguments : [executable] + arguments
        // bash closes whatever this process left open (descriptors above 2), then becomes the program.
        let closeAll = #"for p in /proc/$$/fd/*; do n=${p##*/}; if [ "$n" -gt 2 ]; then eval "exec $n>&-" 2>/dev/null; fi; done; exec "$@""#
        let argv = ["/bin/bash", "-c", closeAll, "haul-pg"] + program
        let output = directory + "/commands.log"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var child: pid_t = 0
        let cArguments: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer {
            for argument in cArguments { free(argument) }
        }
        let spawned = posix_spawn(&child, argv[0], &actions, nil, cArguments, environ)
        guard spawned == 0 else { throw TestSupportError.posix("cannot start \(argv[0])", errno: spawned) }
        var status: Int32 = 0
        while waitpid(child, &status, 0) < 0, errno == EINTR {}
        let exited = status & 0x7f == 0
        guard exited, (status >> 8) & 0xff == 0 else {
            let said = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            throw TestSupportError("\(executable) failed (wait status \(status)): \(said)\n\(log())")
        }
    }

    /// As root, the directory goes to the `postgres` user, who runs the server.
    private static func handOver(_ directory: String) throws {
        guard getuid() == 0 else { return }
        guard let user = getpwnam("postgres") else {
            throw TestSupportError("tests run as root and there is no postgres user to run PostgreSQL (install the postgresql package)")
        }
        guard chown(directory, user.pointee.pw_uid, user.pointee.pw_gid) == 0 else {
            throw TestSupportError.posix("chown \(directory) to postgres")
        }
    }

    private static func findBinaries() throws -> String {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted()
        for version in versions.reversed() where FileManager.default.isExecutableFile(atPath: "\(root)/\(version)/bin/initdb") {
            return "\(root)/\(version)/bin"
        }
        throw TestSupportError("PostgreSQL's server is not installed (no \(root)/*/bin/initdb); install the postgresql package")
    }
}
