import Foundation

/// `LISTEN haul_queue` on a connection of its own, read by one thread, started at the first wait:
/// each notification (an item became queued, on any machine) ends every wait of this process.
/// A lost connection is opened again with backoff; waits meanwhile end at their deadlines.
///
/// `@unchecked Sendable`: `started` is only touched under `lock`; the connection only by the thread.
final class PostgresListener: @unchecked Sendable {
    private let conninfo: String
    private let signal = WorkSignal()
    private let lock = NSLock()
    private var started = false

    init(conninfo: String) {
        self.conninfo = conninfo
    }

    func wait(seconds: Double) {
        startIfNeeded()
        signal.wait(seconds: seconds)
    }

    func wakeAll() {
        signal.wake()
    }

    private func startIfNeeded() {
        let start = lock.withLock { () -> Bool in
            defer { started = true }
            return !started
        }
        guard start else { return }
        let thread = Thread { [self] in listen() }
        thread.name = "haul-pg-listen"
        thread.start()
    }

    /// Runs for the life of the process (a detached thread blocked in `poll`).
    private func listen() {
        var delay = 0.1
        while lock.withLock({ started }) {
            if let connection = try? PGConnection(conninfo), (try? connection.execute("LISTEN haul_queue")) != nil {
                delay = 0.1
                // Work may have appeared while no connection listened.
                signal.wake()
                receive(on: connection)
            }
            Thread.sleep(forTimeInterval: delay)
            delay = min(delay * 2, 2)
        }
    }

    /// Wakes the waiters at each notification until the connection fails. Kept out of `listen`:
    /// two nested loops in one function send the optimizer's loop-invariant code motion into a
    /// search that does not end (a release build never finished).
    @inline(never)
    private func receive(on connection: PGConnection) {
        while connection.isOK {
            var descriptor = pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 1000)
            if ready < 0, errno != EINTR { return }
            guard ready > 0 else { continue }
            guard let channels = try? connection.notifications() else { return }
            if !channels.isEmpty { signal.wake() }
        }
    }
}
