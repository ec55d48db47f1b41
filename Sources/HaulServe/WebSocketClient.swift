import CCivetweb
import Foundation

/// One WebSocket connection to `/jsonrpc`: its answers and notifications go out in order through
/// its own queue and thread, so a slow client holds up only itself, never a download or another
/// client. Notifications reach it only after it made an authenticated call.
///
/// `@unchecked Sendable`: the queue and flags are guarded by `condition`, which is never held
/// during a write (a client that does not read would otherwise block whoever queues a message);
/// `connection` is written to only by the sender thread, under `writing`, and never after `close()`
/// (civetweb's close handler) returned.
final class WebSocketClient: @unchecked Sendable {
    private let connection: OpaquePointer
    private let condition = NSCondition()
    private let writing = NSLock()
    private var outgoing: [Data] = []
    private var closed = false
    private(set) var authenticated = false
    /// Messages waiting beyond this many mean the client does not read: notifications are
    /// dropped for it (answers to its own calls are still queued).
    static let backlog = 512

    init(connection: OpaquePointer) {
        self.connection = connection
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "haul-websocket"
        thread.start()
    }

    func markAuthenticated() {
        condition.withLock { authenticated = true }
    }

    /// Queues an answer (always) or a notification (if authenticated and not far behind). Never
    /// waits for the network.
    func send(_ message: Data, isNotification: Bool) {
        condition.withLock {
            guard !closed else { return }
            if isNotification, !authenticated || outgoing.count >= Self.backlog { return }
            outgoing.append(message)
            condition.signal()
        }
    }

    /// Called from civetweb's close handler: waits for a write in progress (bounded by civetweb's
    /// send timeout); no write happens after this returns.
    func close() {
        condition.withLock {
            closed = true
            outgoing.removeAll()
            condition.broadcast()
        }
        writing.lock()
        writing.unlock()
    }

    private var isClosed: Bool { condition.withLock { closed } }

    private func run() {
        while true {
            condition.lock()
            while outgoing.isEmpty, !closed { condition.wait() }
            if closed {
                condition.unlock()
                return
            }
            let message = outgoing.removeFirst()
            condition.unlock()
            writing.lock()
            var written: Int32 = 0
            if !isClosed {
                written = message.withUnsafeBytes { bytes in
                    mg_websocket_write(connection, Int32(MG_WEBSOCKET_OPCODE_TEXT), bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count)
                }
            }
            writing.unlock()
            if written <= 0 {
                // Gone or too slow for the send timeout: nothing more is sent to it.
                condition.withLock {
                    closed = true
                    outgoing.removeAll()
                }
                return
            }
        }
    }
}

/// The open WebSocket clients, by connection.
final class WebSocketClients: Sendable {
    private let clients = NSLockedDictionary()

    func add(_ client: WebSocketClient, for connection: OpaquePointer) {
        clients.set(client, for: connection)
    }

    func client(for connection: OpaquePointer) -> WebSocketClient? {
        clients.get(connection)
    }

    func remove(_ connection: OpaquePointer) -> WebSocketClient? {
        clients.remove(connection)
    }

    func broadcast(_ message: Data) {
        for client in clients.all() { client.send(message, isNotification: true) }
    }
}

/// A lock-guarded map from a connection's address to its client.
final class NSLockedDictionary: @unchecked Sendable {
    private let lock = NSLock()
    private var map: [UInt: WebSocketClient] = [:]

    private static func key(_ connection: OpaquePointer) -> UInt { UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection))) }

    func set(_ client: WebSocketClient, for connection: OpaquePointer) { lock.withLock { map[Self.key(connection)] = client } }
    func get(_ connection: OpaquePointer) -> WebSocketClient? { lock.withLock { map[Self.key(connection)] } }
    func remove(_ connection: OpaquePointer) -> WebSocketClient? { lock.withLock { map.removeValue(forKey: Self.key(connection)) } }
    func all() -> [WebSocketClient] { lock.withLock { Array(map.values) } }
}
