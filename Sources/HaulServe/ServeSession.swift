import Foundation
import Haul
import HaulRPC

/// `haul serve`: the queue run without end (as `haul queue run`, same store and leases), aria2's
/// JSON-RPC and the dashboard in front of it, and the queue's events turned into aria2's
/// notifications. `stop()` (a signal, `aria2.shutdown`) pauses every download at a checkpoint;
/// they come back active by themselves when the server starts again on the same store.
package final class ServeSession: Sendable {
    package let queue: DownloadQueue
    package let settings: ServeSettings
    private let runOptions: QueueRunOptions
    private let maxPerHost: Int?
    private let server: LockedServer
    private let events: ServeEvents

    package struct Configuration: Sendable {
        package var host = "127.0.0.1"
        package var port = 6800
        package var secret: String?
        package var root: String
        package var jobs = 5
        package var allowedOrigins: [String] = []
        /// Notifications to every WebSocket (aria2's way); false: only to sockets that made an
        /// authenticated call.
        package var notifyUnauthenticated = true
        package var runOptions = QueueRunOptions()
        /// At most this many downloads of one host at once (across the fleet on a shared store); nil for no limit.
        package var maxPerHost: Int?

        package init(root: String) {
            self.root = root
        }
    }

    package init(queue: DownloadQueue, configuration: Configuration) throws(ServeError) {
        if !RequestPolicy.isLoopbackName(configuration.host), configuration.secret?.isEmpty ?? true {
            throw ServeError("listening on \(configuration.host) (not loopback) needs --secret: anyone who can reach it could download to this machine")
        }
        self.queue = queue
        let overall = configuration.runOptions.rateLimiter ?? RateLimiter(bytesPerSecond: 0)
        settings = ServeSettings(
            root: configuration.root, concurrency: QueueConcurrency(limit: configuration.jobs, maximum: max(16, configuration.jobs)),
            overallLimit: overall)
        var options = configuration.runOptions
        options.concurrency = settings.concurrency
        options.rateLimiter = overall
        runOptions = options
        maxPerHost = configuration.maxPerHost
        let server = LockedServer()
        self.server = server
        let events = ServeEvents(queue: queue, server: server)
        self.events = events
        let concurrency = settings.concurrency
        let service = RPCService(
            queue: queue, settings: settings, secret: configuration.secret,
            notify: { method, id in events.publish(method, item: id) },
            // `stop()`: every download pauses at a checkpoint and `run()` ends.
            shutdown: { _ in Self.stop(queue, concurrency) })
        let started = try RPCServer(
            service: service, host: configuration.host, port: configuration.port, allowedOrigins: configuration.allowedOrigins,
            notifyUnauthenticated: configuration.notifyUnauthenticated)
        server.set(started)
    }

    /// The port the server listens on.
    package var port: Int { server.get()?.port ?? 0 }

    /// Runs the queue until `stop()`; then stops the server.
    package func run() async {
        let stream = queue.allEvents()
        // Completions a server killed before it journaled them are journaled (and sent) first.
        events.recover()
        let pump = Task { [events] in
            for await event in stream {
                if case .progress(let progress) = event.event {
                    events.progress(progress, of: event.id)
                    continue
                }
                guard let method = Self.notification(for: event.event) else { continue }
                events.publish(method, item: event.id)
            }
        }
        _ = await queue.run(runOptions, maxPerHost: maxPerHost)
        pump.cancel()
        server.get()?.stop()
    }

    /// Pauses every download at a checkpoint and ends `run()`, whenever it comes: before `run()`
    /// started too (its run then ends at once).
    package func stop() {
        Self.stop(queue, settings.concurrency)
    }

    /// The stop is recorded on the run's own control first, so a run starting meanwhile sees it.
    private static func stop(_ queue: DownloadQueue, _ concurrency: QueueConcurrency) {
        concurrency.requestStop()
        queue.stopAll()
    }

    static func notification(for event: DownloadEvent) -> String? {
        switch event {
        case .started: return "aria2.onDownloadStart"
        case .paused: return "aria2.onDownloadPause"
        case .completed: return "aria2.onDownloadComplete"
        case .failed: return "aria2.onDownloadError"
        case .cancelled: return "aria2.onDownloadStop"
        default: return nil
        }
    }
}

/// The server, set once after it started (the service's closures are made before it exists).
final class LockedServer: @unchecked Sendable {
    private let lock = NSLock()
    private var server: RPCServer?

    func set(_ value: RPCServer) { lock.withLock { server = value } }
    func get() -> RPCServer? { lock.withLock { server } }
}
