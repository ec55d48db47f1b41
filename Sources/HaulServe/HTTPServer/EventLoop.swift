import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The server's one I/O thread: poll(2) over the listening sockets, every connection and the
/// mailbox's wake pipe. It accepts, reads, parses, writes and keeps the deadlines; it never
/// blocks and never runs a handler (workers do, and post their answers back). An idle
/// connection costs a descriptor and a `Connection`, no thread.
final class EventLoop {
    private let listener: Listener
    private let mailbox: LoopMailbox
    private let workers: WorkerPool
    private let handler: any HTTPServerHandler
    private let limits: HTTPServerLimits
    private let subscribeNewSockets: Bool
    private var connections: [ConnectionID: Connection] = [:]
    private var lastID: ConnectionID = 0
    private var webSockets = 0
    /// Accepting waits until then after the process ran out of descriptors (the listener would
    /// otherwise stay readable and the loop spin).
    private var acceptPausedUntil: ContinuousClock.Instant?
    private var scratch = [UInt8](repeating: 0, count: 64 * 1024)
    /// The last durable events published, oldest first (at most `limits.recentEvents`): a stream
    /// whose worker read the journal before one of them was published gets it from here.
    private var recentEvents: [StreamEvent] = []

    /// At most this many connections accepted per turn, so a flood of connects cannot starve
    /// the connections already open.
    static let acceptsPerTurn = 64

    init(
        listener: Listener, mailbox: LoopMailbox, workers: WorkerPool, handler: any HTTPServerHandler, limits: HTTPServerLimits,
        subscribeNewSockets: Bool
    ) {
        self.listener = listener
        self.mailbox = mailbox
        self.workers = workers
        self.handler = handler
        self.limits = limits
        self.subscribeNewSockets = subscribeNewSockets
    }

    /// Runs until the mailbox asks it to stop; then sends what it can at once and closes every
    /// connection and the listening sockets.
    func run() {
        var descriptors: [pollfd] = []
        var polled: [Connection] = []
        while true {
            let now = ContinuousClock.now
            descriptors.removeAll(keepingCapacity: true)
            polled.removeAll(keepingCapacity: true)
            descriptors.append(pollfd(fd: mailbox.wakeDescriptor, events: Int16(POLLIN), revents: 0))
            if let paused = acceptPausedUntil, now >= paused { acceptPausedUntil = nil }
            let listening = acceptPausedUntil == nil ? listener.descriptors : []
            for fd in listening { descriptors.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
            var nearest = acceptPausedUntil
            for connection in connections.values {
                var events: Int16 = 0
                if connection.wantsRead { events |= Int16(POLLIN) }
                if !connection.output.isEmpty { events |= Int16(POLLOUT) }
                descriptors.append(pollfd(fd: connection.fd, events: events, revents: 0))
                polled.append(connection)
                if let deadline = connection.deadline { nearest = min(nearest ?? deadline, deadline) }
            }
            // Letters that came while it was awake are taken without sleeping.
            let timeout = mailbox.willSleep() ? Self.milliseconds(until: nearest, from: now) : 0
            let ready = poll(&descriptors, nfds_t(descriptors.count), timeout)
            guard ready >= 0 || errno == EINTR else {
                // Not expected (the arguments are ours); do not spin on it.
                usleep(10_000)
                continue
            }
            let turn = ContinuousClock.now
            let (letters, stop) = mailbox.take()
            deliver(letters, now: turn)
            if stop { return shutDown(now: turn) }
            for (index, fd) in listening.enumerated() where descriptors[1 + index].revents != 0 {
                acceptWaiting(on: fd, now: turn)
            }
            for (index, connection) in polled.enumerated() {
                let events = Int32(descriptors[1 + listening.count + index].revents)
                guard events != 0, !connection.isFinished else { continue }
                if events & Int32(POLLERR | POLLNVAL) != 0 {
                    connection.finish()
                    continue
                }
                if events & Int32(POLLOUT) != 0 { connection.flush(now: turn) }
                if events & Int32(POLLIN | POLLHUP) != 0, !connection.isFinished {
                    scratch.withUnsafeMutableBytes { connection.read(using: $0, now: turn) }
                }
                advance(connection, now: turn)
            }
            var unsent = 0
            for connection in connections.values {
                connection.expire(now: turn)
                if connection.isFinished {
                    close(connection)
                } else {
                    connection.noteOutput(now: turn)
                    unsent += connection.output.bytes
                }
            }
            if unsent > limits.unsentBytes { shedUnsent(over: unsent - limits.unsentBytes, now: turn) }
        }
    }

    /// Closes connections with unsent bytes until `excess` bytes are gone: clients that stopped
    /// reading, each within its own bounds, must not add up past the server's. Those that never
    /// proved the token go first, and among them those whose output has stood still longest (a
    /// client that reads, just given a large answer, has not stalled), then the largest.
    private func shedUnsent(over excess: Int, now: ContinuousClock.Instant) {
        let order = connections.values.filter { !$0.output.isEmpty }.map { connection in
            (
                connection,
                Shedding.UnsentCandidate(
                    isAuthenticated: connection.isAuthenticated, stalled: now - (connection.unsentSince ?? now), bytes: connection.output.bytes)
            )
        }.sorted { $0.1 < $1.1 }
        var freed = 0
        for (connection, _) in order {
            guard freed < excess else { return }
            freed += connection.output.bytes
            connection.finish()
            close(connection)
        }
    }

    /// What a newcomer needs room for: a connection (any connection that may go goes), a WebSocket
    /// (only a WebSocket), or a stream at `HTTPServerLimits.streams` (only a stream: one whose
    /// client took nothing for a while, or an event stream with nothing to send, its client maybe
    /// gone without a word; a stream still being read stays, and the new one is refused).
    private enum Room { case connection, webSocket, stream }

    /// Closes the connection that matters least among those that may go (`Shedding`) to make
    /// `room`; false when none may.
    private func makeRoom(for room: Room, now: ContinuousClock.Instant) -> Bool {
        let candidates = connections.values.lazy.filter { room != .stream || $0.isStreaming }.compactMap { connection in
            connection.shedding(now: now).map {
                Shedding.Candidate(id: connection.id, rank: $0, isWebSocket: connection.isUpgraded, idleSince: connection.lastActivity)
            }
        }
        guard let victim = Shedding.victim(among: candidates, webSocketsOnly: room == .webSocket), let connection = connections[victim] else {
            return false
        }
        connection.finish()
        close(connection)
        return true
    }

    /// Lets `connection` take its next steps and hands what needs a worker to one.
    private func advance(_ connection: Connection, now: ContinuousClock.Instant) {
        guard !connection.isFinished else { return }
        let context = Connection.Context(
            handler: handler, now: now,
            webSocketRoom: { [unowned self] in self.webSockets < self.limits.webSockets || self.makeRoom(for: .webSocket, now: now) },
            subscribeNewSockets: subscribeNewSockets)
        let wasUpgraded = connection.isUpgraded
        let dispatch = connection.advance(context)
        if connection.isUpgraded, !wasUpgraded { webSockets += 1 }
        guard let dispatch else { return }
        let id = connection.id
        let handler = handler
        let mailbox = mailbox
        let submitted: Bool
        switch dispatch {
        case .request(let head, let body, let keepAlive):
            submitted = workers.submit {
                let response = handler.respond(to: head, body: body)
                let connectionHeader = HTTPRequestFraming.connectionHeader(keepAlive: keepAlive, minorVersion: head.minorVersion)
                mailbox.post(.response(id, response.serialized(connection: connectionHeader, toHEAD: head.method == "HEAD"), keepAlive: keepAlive))
            }
        case .stream(let head, let keepAlive):
            submitted = workers.submit {
                mailbox.post(.streamed(id, handler.stream(to: head), head: head, keepAlive: keepAlive))
            }
        case .message(let payload):
            // A socket that has not proved the token waits behind every other client's work.
            submitted = workers.submit(connection.isAuthenticated ? .first : .later) {
                let reply = handler.message(payload)
                mailbox.post(.webSocketReply(id, reply.message.map(WebSocketFrame.text), authenticated: reply.authenticated))
            }
        }
        if !submitted { connection.finish() }
    }

    private func deliver(_ letters: [LoopMailbox.Letter], now: ContinuousClock.Instant) {
        var answered: [Connection] = []
        for letter in letters {
            switch letter {
            case .response(let id, let bytes, let keepAlive):
                guard let connection = connections[id] else { continue }
                connection.responded(bytes, keepAlive: keepAlive, now: now)
                answered.append(connection)
            case .webSocketReply(let id, let frame, let authenticated):
                guard let connection = connections[id] else { continue }
                connection.replied(frame, authenticated: authenticated)
                answered.append(connection)
            case .broadcast(let frame):
                for connection in connections.values { connection.broadcast(frame) }
            case .streamed(let id, let reply, let head, let keepAlive):
                guard let connection = connections[id] else { continue }
                var reply = reply
                if reply.streams(head), connections.values.count(where: \.isStreaming) >= limits.streams, !makeRoom(for: .stream, now: now) {
                    // A file's descriptor is closed with the reply dropped here.
                    reply = .whole(Self.tooManyStreams(limits.streams))
                }
                connection.streamed(reply, head: head, keepAlive: keepAlive, recent: recentEvents, now: now)
                answered.append(connection)
            case .event(let event):
                if event.durableID != nil {
                    recentEvents.append(event)
                    if recentEvents.count > limits.recentEvents { recentEvents.removeFirst(recentEvents.count - limits.recentEvents) }
                }
                for connection in connections.values { connection.event(event) }
            }
        }
        // Input that waited for the answer (a pipelined request, the socket's next message).
        for connection in answered { advance(connection, now: now) }
    }

    /// The answer to a stream request past `HTTPServerLimits.streams`.
    static func tooManyStreams(_ bound: Int) -> HTTPResponse {
        let plain = HTTPResponse.text(
            503, "haul serve is already sending \(bound) files and event streams, the most it sends at once: try again shortly")
        return HTTPResponse(status: 503, headers: plain.headers + [HTTPHeader(name: "Retry-After", value: "5")], body: plain.body)
    }

    private func acceptWaiting(on listenerFD: Int32, now: ContinuousClock.Instant) {
        for _ in 0..<Self.acceptsPerTurn {
            let fd = Socket.accept(listenerFD)
            guard fd >= 0 else {
                switch errno {
                case EINTR, ECONNABORTED: continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM: acceptPausedUntil = now + .milliseconds(100)
                default: break
                }
                return
            }
            guard connections.count < limits.connections || makeRoom(for: .connection, now: now) else {
                _ = systemClose(fd)
                continue
            }
            lastID += 1
            connections[lastID] = Connection(id: lastID, fd: fd, limits: limits, now: now)
        }
    }

    private func close(_ connection: Connection) {
        if connection.isUpgraded { webSockets -= 1 }
        connections.removeValue(forKey: connection.id)
        _ = systemClose(connection.fd)
    }

    private func shutDown(now: ContinuousClock.Instant) {
        for connection in connections.values {
            // The answers of the handlers that ran to the end get one try.
            connection.flush(now: now)
            _ = systemClose(connection.fd)
        }
        connections.removeAll()
        webSockets = 0
        listener.close()
    }

    /// poll(2)'s timeout: until `deadline` (rounded up), or -1 for none.
    static func milliseconds(until deadline: ContinuousClock.Instant?, from now: ContinuousClock.Instant) -> Int32 {
        guard let deadline else { return -1 }
        guard deadline > now else { return 0 }
        let (seconds, attoseconds) = (deadline - now).components
        let total = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: total)
    }
}
