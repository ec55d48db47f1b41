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
        while true {
            do {
                let connection = try PGConnection(conninfo)
                try connection.execute("LISTEN haul_queue")
                delay = 0.1
                // Work may have appeared while no connection listened.
                signal.wake()
                try receive(on: connection)
            } catch {
                Thread.sleep(forTimeInterval: delay)
                delay = min(delay * 2, 2)
            }
        }
    }

    private func receive(on connection: PGConnection) throws(PGError) {
        while true {
            var descriptor = pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 1000)
            if ready < 0, errno != EINTR { throw PGError(message: "poll failed", connectionLost: true) }
            guard ready > 0 else { continue }
            if try !connection.notifications().isEmpty { signal.wake() }
            if !connection.isOK { throw PGError(message: "the listening connection closed", connectionLost: true) }
        }
    }
}
