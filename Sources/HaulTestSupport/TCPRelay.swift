import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP relay on loopback between a client and a server (a worker and its PostgreSQL server)
/// that can lose what the server says: cut a connection right after the server answered a
/// `COMMIT` (the commit happened, its reply never arrives), or hold every reply back (a server
/// that stops answering) until released. One thread per relayed connection; `stop` closes
/// everything it opened. It never signals a process.
package final class TCPRelay: Sendable {
    /// What the relay does with the server's bytes.
    package enum Mode: Sendable, Equatable {
        /// Relays both ways.
        case pass
        /// Once the client sent a message containing `marker` (a statement of the transaction to
        /// hit), the next `COMMIT` it sends reaches the server, and the connection is cut as soon
        /// as the server answers it, that answer dropped; then `pass` again.
        case cutAfterCommit(following: String)
        /// The server's bytes are read and kept, never forwarded, until `release()`.
        case hold
    }

    /// The loopback port clients connect to.
    package let port: Int
    /// What the relay's threads use: never the relay itself, so that dropping it stops them.
    private let shared: Shared

    struct State {
        var mode = Mode.pass
        var stopped = false
        var sockets: Set<Int32> = []
        /// Commits seen cut, for tests to wait on.
        var cuts = 0
    }

    /// Starts a relay to 127.0.0.1:`upstream`.
    package init(to upstream: Int) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError.posix("socket()") }
        var address = Shared.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && listen(fd, 64) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else {
            close(fd)
            throw TestSupportError.posix("bind/listen 127.0.0.1:0")
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        let shared = Shared(listener: fd, upstream: upstream)
        self.shared = shared
        let thread = Thread { shared.acceptLoop() }
        thread.name = "tcp-relay-accept"
        thread.start()
    }

    deinit {
        stop()
    }

    /// Sets what happens to the server's bytes from now on.
    package func set(_ mode: Mode) {
        shared.state.withLock { $0.mode = mode }
    }

    /// Ends `hold`: what was kept is forwarded, and relaying goes on.
    package func release() {
        set(.pass)
    }

    /// How many connections were cut after a COMMIT.
    package var cuts: Int { shared.state.withLock { $0.cuts } }

    /// Closes the listener and every relayed connection.
    package func stop() {
        shared.stop()
    }
}

/// The relay's listener, connections and mode, shared by its threads.
private final class Shared: Sendable {
    let listener: Int32
    let upstream: Int
    let state = Mutex(TCPRelay.State())

    init(listener: Int32, upstream: Int) {
        self.listener = listener
        self.upstream = upstream
    }

    func stop() {
        let sockets = state.withLock { state -> Set<Int32> in
            guard !state.stopped else { return [] }
            state.stopped = true
            defer { state.sockets = [] }
            return state.sockets
        }
        for fd in sockets { shutdown(fd, Int32(SHUT_RDWR)) }
        shutdown(listener, Int32(SHUT_RDWR))
    }

    func acceptLoop() {
        defer { close(listener) }
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else {
                if errno == EINTR { continue }
                return
            }
            guard let server = connectUpstream() else {
                close(client)
                continue
            }
            let admitted = state.withLock { state -> Bool in
                guard !state.stopped else { return false }
                state.sockets.formUnion([client, server])
                return true
            }
            guard admitted else {
                close(client)
                close(server)
                return
            }
            let thread = Thread { [self] in relay(client, server) }
            thread.name = "tcp-relay"
            thread.start()
        }
    }

    private func connectUpstream() -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = Self.loopback(port: upstream)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Relays one connection until either side closes, the relay stops, or a cut.
    private func relay(_ client: Int32, _ server: Int32) {
        defer {
            state.withLock { $0.sockets.subtract([client, server]) }
            close(client)
            close(server)
        }
        var armed = false
        var commitSent = false
        var held: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let mode = state.withLock { $0.stopped ? nil : $0.mode }
            guard let mode else { return }
            if mode != TCPRelay.Mode.hold && !held.isEmpty {
                guard Self.sendAll(held, to: client) else { return }
                held = []
            }
            var fds = [pollfd(fd: client, events: Int16(POLLIN), revents: 0), pollfd(fd: server, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, 50)
            if ready < 0 && errno != EINTR { return }
            if ready <= 0 { continue }
            if fds[0].revents != 0 {
                let count = read(client, &buffer, buffer.count)
                guard count > 0 else { return }
                let bytes = Array(buffer[0..<count])
                if case .cutAfterCommit(let marker) = mode {
                    if Self.contains(bytes, marker) { armed = true }
                    if armed && Self.contains(bytes, "COMMIT") { commitSent = true }
                }
                guard Self.sendAll(bytes, to: server) else { return }
            }
            if fds[1].revents != 0 {
                let count = read(server, &buffer, buffer.count)
                guard count > 0 else { return }
                let bytes = Array(buffer[0..<count])
                if commitSent {
                    // The server committed and answered: the answer is lost with the connection.
                    state.withLock { state in
                        state.cuts += 1
                        if case .cutAfterCommit = state.mode { state.mode = .pass }
                    }
                    return
                }
                if mode == TCPRelay.Mode.hold {
                    held += bytes
                } else {
                    guard Self.sendAll(bytes, to: client) else { return }
                }
            }
        }
    }

    private static func contains(_ bytes: [UInt8], _ text: String) -> Bool {
        let needle = Array(text.utf8)
        guard bytes.count >= needle.count else { return false }
        for start in 0...(bytes.count - needle.count) where bytes[start..<start + needle.count].elementsEqual(needle) {
            return true
        }
        return false
    }

    private static func sendAll(_ bytes: [UInt8], to fd: Int32) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return false }
            sent += count
        }
        return true
    }

    static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(truncatingIfNeeded: port).bigEndian
        address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
        return address
    }
}
