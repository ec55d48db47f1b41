import Foundation

/// A small HTTP/1.1 and WebSocket server: one event-loop thread over every connection (see
/// `EventLoop`) and a few worker threads with ample stacks for the handler (see `WorkerPool`).
/// Idle connections, idle WebSockets included, cost no thread; a client that floods uses one
/// worker at a time; a client that stops reading holds up nobody (its output waits in its own
/// buffer, bounded by `HTTPServerLimits`).
final class HTTPServer: Sendable {
    /// The port it listens on (the system's choice when asked for 0).
    let port: Int
    private let mailbox: LoopMailbox
    private let workers: WorkerPool
    private let loop: JoinableThread
    private let stopping = StopFlag()

    /// Listens on `host` (an address or a name) and `port` and starts serving.
    /// `subscribeNewSockets`: a WebSocket receives broadcasts from its handshake on (else only
    /// once a message's handler said so).
    init(host: String, port: Int, limits: HTTPServerLimits = HTTPServerLimits(), subscribeNewSockets: Bool, handler: any HTTPServerHandler)
        throws(ServeError)
    {
        let listener = try Listener(host: host, port: port)
        let mailbox: LoopMailbox
        do {
            mailbox = try LoopMailbox()
        } catch {
            listener.close()
            throw error
        }
        let workers = WorkerPool(count: limits.workers, stackBytes: limits.workerStackBytes)
        self.port = listener.port
        self.mailbox = mailbox
        self.workers = workers
        loop = JoinableThread(name: "haul-serve-loop", stackBytes: 1 << 20) {
            EventLoop(listener: listener, mailbox: mailbox, workers: workers, handler: handler, limits: limits, subscribeNewSockets: subscribeNewSockets)
                .run()
        }
    }

    /// Sends `message` as a text frame to every WebSocket that receives broadcasts and is not
    /// too far behind. Never waits.
    func broadcast(_ message: Data) {
        mailbox.post(.broadcast(WebSocketFrame.text(message)))
    }

    /// Sends `event` to every open event stream (`HTTPStreamReply.events`). Never waits.
    func publish(_ event: StreamEvent) {
        mailbox.post(.event(event))
    }

    /// Waits for the handlers running to return (queued requests are dropped), sends their
    /// answers if the sockets take them at once, closes every connection and stops listening.
    /// Prompt: nothing waits for a client. Later calls return at once.
    func stop() {
        guard stopping.set() else { return }
        workers.stop()
        mailbox.requestStop()
        loop.join()
        mailbox.close()
    }
}

/// Set once, by whoever comes first.
///
/// `@unchecked Sendable`: `isSet` is guarded by `lock`.
final class StopFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var isSet = false

    /// True for the first caller only.
    func set() -> Bool {
        lock.withLock {
            defer { isSet = true }
            return !isSet
        }
    }
}
