import Foundation
import Haul
import HaulCore
import HaulServe

/// `haul serve`: the queue behind aria2's JSON-RPC (HTTP and WebSocket) and a dashboard.
struct ServeCommand: ParsableCommand {
    static let commandName = "haul serve"
    static let abstract = "run the queue behind aria2's JSON-RPC and a web dashboard"
    static var options: [OptionSpec] {
        [
            OptionSpec(short: nil, long: "listen", value: "HOST:PORT", help: "where to listen (default 127.0.0.1:6800)"),
            OptionSpec(short: nil, long: "secret", value: "TOKEN", help: "the RPC secret clients send as token:TOKEN"),
            OptionSpec(short: nil, long: "secret-file", value: "FILE", help: "read the secret from FILE (kept out of the process list)"),
            OptionSpec(short: "d", long: "dir", value: "DIR", help: "where downloads go; clients' dir/out stay inside it (default .)"),
            OptionSpec(
                short: nil, long: "allow-origin", value: "ORIGIN", help: "a web UI origin allowed to call, e.g. http://127.0.0.1:8080", repeatable: true),
            OptionSpec(
                short: nil, long: "notify-authenticated-only", value: nil,
                help: "send notifications only to WebSockets that made a call with the token (default: every accepted socket, as aria2)"),
        ] + RunSettings.specs.filter { $0.long != "claim-batch" } + ConnectionsOptions.specs + HostLimitOptions.specs + StoreOptions.specs
    }

    static let overview = """
        Usage: haul serve [--listen HOST:PORT] [--secret TOKEN] [-d DIR] [-j N] [--state DIR]

        Runs the queue (the same store as 'haul queue', so 'haul queue list' sees the same
        downloads) and answers aria2's JSON-RPC at http://HOST:PORT/jsonrpc, by POST and over a
        WebSocket, for aria2p, AriaNg and scripts; the dashboard is at http://HOST:PORT/.
        SIGINT/SIGTERM (or aria2.shutdown) pause every download at a checkpoint; started again on
        the same --state, they continue where they stopped, under the same GIDs. -j defaults to 5
        here, as aria2's max-concurrent-downloads does.
        """

    let host: String
    let port: Int
    let secret: String?
    let directory: String
    let allowedOrigins: [String]
    /// Notifications to every accepted WebSocket (aria2's way; aria2p's listener never calls), or
    /// only to those that made an authenticated call (`--notify-authenticated-only`).
    let notifyUnauthenticated: Bool
    /// Downloads at once: `-j`, else aria2's default of 5 (not the batch default of 4).
    let jobs: Int
    let settings: RunSettings
    let connections: ConnectionsOptions
    let store: StoreOptions
    let hostLimit: HostLimitOptions

    init(_ parsed: ParsedArguments) throws(UsageError) {
        let listen = parsed.value("listen") ?? "127.0.0.1:6800"
        guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]), (0...65535).contains(port) else {
            throw UsageError(message: "--listen needs HOST:PORT, e.g. 127.0.0.1:6800, got \"\(listen)\"")
        }
        var host = String(listen[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw UsageError(message: "--listen needs a host, e.g. 127.0.0.1:\(port)") }
        self.host = host
        self.port = port
        if let file = parsed.value("secret-file") {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw UsageError(message: "--secret-file \(file): cannot read the file")
            }
            secret = text.trimmingCharacters(in: .whitespacesAndNewlines)
        } else {
            secret = parsed.value("secret")
        }
        directory = AbsolutePath.of(parsed.value("dir") ?? ".")
        allowedOrigins = parsed.all("allow-origin")
        notifyUnauthenticated = !parsed.flag("notify-authenticated-only")
        settings = try RunSettings(parsed)
        jobs = parsed.value("jobs") == nil ? 5 : settings.jobs
        connections = try ConnectionsOptions(parsed)
        store = StoreOptions(parsed)
        hostLimit = try HostLimitOptions(parsed)
    }

    func validate() throws(UsageError) {
        if secret?.isEmpty == true { throw UsageError(message: "the secret is empty") }
        if !settings.engine.hasBackpressure {
            // Clients set speed limits on running downloads at any time (aria2.changeOption).
            throw UsageError(message: "haul serve cannot run on the \(settings.engine.rawValue) engine here: it cannot keep speed limits (use --engine curl)")
        }
    }

    func run() async throws(CommandError) -> ExitCode {
        let queue = try store.open(engine: settings.engine)
        var configuration = ServeSession.Configuration(root: directory)
        configuration.host = host
        configuration.port = port
        configuration.secret = secret
        configuration.jobs = jobs
        configuration.allowedOrigins = allowedOrigins
        configuration.notifyUnauthenticated = notifyUnauthenticated
        configuration.runOptions = settings.runOptions(connections: connections)
        configuration.maxPerHost = hostLimit.maxPerHost
        let session: ServeSession
        do throws(ServeError) {
            session = try ServeSession(queue: queue, configuration: configuration)
        } catch {
            throw .usage(UsageError(message: error.message))
        }
        let signals = SignalWatcher { _ in session.stop() }
        let shown = host.contains(":") ? "[\(host)]" : host
        FileHandle.standardError.write(Data("haul serve: listening on http://\(shown):\(session.port)/ (JSON-RPC at /jsonrpc)\n".utf8))
        await session.run()
        return signals.exitCode ?? .success
    }
}
