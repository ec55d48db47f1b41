import CCivetweb
import Foundation

/// One WebSocket connection to `/jsonrpc`: its answers and notifications go out in order through
/// its own queue and thread, so a slow client holds up only itself, never a download or another
/// client. Notifications reach it only after it made an authenticated call.
///
/// `@unchecked Sendable`: `connection` is used only by the sender thread under `condition`, and
/// only until `close()` (civetweb's close handler) returns; every other field is guarded by
/// `condition`.
final class WebSocketClient: @unchecked Sendable {
    private let connection: OpaquePointer
    private let condition = NSCondition()
    private var outgoing: [Data] = []
    private var closed = false
    private var finished = false
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

    /// Queues an answer (always) or a notification (if authenticated and not far behind).
    func send(_ message: Data, isNotification: Bool) {
        condition.withLock {
            guard !closed else { return }
            if isNotification, !authenticated || outgoing.count >= Self.backlog { return }
            outgoing.append(message)
            condition.signal()
        }
    }

    /// Called from civetweb's close handler: no write happens after this returns.
    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        while !finished { condition.wait() }
        condition.unlock()
    }

    private func run() {
        condition.lock()
        while true {
            while outgoing.isEmpty, !closed { condition.wait() }
            if closed { break }
            let message = outgoing.removeFirst()
            // Written while holding the condition: close() waits for it and then the connection is gone.
            let written = message.withUnsafeBytes { bytes in
                mg_websocket_write(connection, Int32(MG_WEBSOCKET_OPCODE_TEXT), bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count)
            }
            if written <= 0 { outgoing.removeAll() }
        }
        finished = true
        condition.broadcast()
        condition.unlock()
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
