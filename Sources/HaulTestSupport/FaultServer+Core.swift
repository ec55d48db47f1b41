import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The shared state and threads behind a ``FaultServer``.
///
/// The accept thread and connection threads retain this object, never the `FaultServer`
/// facade, so the facade's `deinit` can run and stop them.
final class FaultServerCore: Sendable {
    struct State {
        var resources: [String: StoredResource] = [:]
        var queuedFaults: [String: [Fault]] = [:]
        var persistentFaults: [String: [Fault]] = [:]
        var requests: [RecordedRequest] = []
        var bodyBytesSent: [String: Int] = [:]
        /// Live connection sockets by id. A socket is removed here before its thread closes
        /// it, so `stop()` (which shuts sockets down under the lock) never touches a reused fd.
        var connections: [Int: Int32] = [:]
        var nextConnectionID = 0
        var isStopping = false
        var isListenerOpen = true
    }

    let port: Int
    private let listener: Int32
    private let state = Mutex(State())
    /// Entered once per server thread; `stop()` waits for it to empty.
    private let threads = DispatchGroup()

    init(address loopback: in_addr) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw FaultServerError(operation: "socket", code: errno) }
        var enable: Int32 = 1
        guard setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &enable, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            let code = errno
            close(fd)
            throw FaultServerError(operation: "setsockopt(SO_REUSEADDR)", code: code)
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr = loopback
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            let code = errno
            close(fd)
            throw FaultServerError(operation: "bind", code: code)
        }
        guard listen(fd, 128) == 0 else {
            let code = errno
            close(fd)
            throw FaultServerError(operation: "listen", code: code)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else {
            let code = errno
            close(fd)
            throw FaultServerError(operation: "getsockname", code: code)
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    // MARK: - Lifecycle

    func start() {
        threads.enter()
        let thread = Thread { [self] in
            defer { threads.leave() }
            acceptLoop()
        }
        thread.name = "FaultServer accept :\(port)"
        thread.start()
    }

    func stop() {
        let alreadyStopping = state.withLock { state -> Bool in
            if state.isStopping { return true }
            state.isStopping = true
            // On Linux, shutting a listening socket down wakes a blocked accept() with EINVAL.
            if state.isListenerOpen { shutdown(listener, Int32(SHUT_RDWR)) }
            for fd in state.connections.values { shutdown(fd, Int32(SHUT_RDWR)) }
            return false
        }
        if !alreadyStopping {
            _ = threads.wait(timeout: .now() + 10)
        }
    }

    var isStopping: Bool { state.withLock { $0.isStopping } }

    private func acceptLoop() {
        while true {
            // accept4 is not visible from Swift's Glibc; child processes must not inherit the socket.
            let client = accept(listener, nil, nil)
            if client < 0 {
                let code = errno
                if isStopping { break }
                if code == EINTR || code == ECONNABORTED || code == EPROTO { continue }
                if code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM {
                    usleep(10_000)
                    continue
                }
                break
            }
            guard let id = register(client) else {
                close(client)
                break
            }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            var enable: Int32 = 1
            _ = setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &enable, socklen_t(MemoryLayout<Int32>.size))
            threads.enter()
            let thread = Thread { [self] in
                defer { threads.leave() }
                let connection = FaultServerConnection(fd: client, core: self)
                connection.serve()
                unregister(id)
                close(client)
            }
            thread.name = "FaultServer connection \(id)"
            thread.start()
        }
        state.withLock { state in
            state.isListenerOpen = false
            close(listener)
        }
    }

    private func register(_ fd: Int32) -> Int? {
        state.withLock { state -> Int? in
            if state.isStopping { return nil }
            let id = state.nextConnectionID
            state.nextConnectionID += 1
            state.connections[id] = fd
            return id
        }
    }

    private func unregister(_ id: Int) {
        state.withLock { state in
            state.connections[id] = nil
        }
    }

    /// Sleeps for `seconds`, waking early when the server stops. Returns false if it stopped.
    func pause(_ seconds: Double) -> Bool {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(max(0, seconds) * 1e9)
        while true {
            if isStopping { return false }
            let now = DispatchTime.now().uptimeNanoseconds
            if now >= deadline { return true }
            let slice = min(deadline - now, 20_000_000)
            usleep(useconds_t(slice / 1000))
        }
    }

    // MARK: - Configuration and records

    func setResource(_ path: String, _ resource: StoredResource) {
        state.withLock { $0.resources[path] = resource }
    }

    func enqueueFaults(_ path: String, _ faults: [Fault]) {
        state.withLock { $0.queuedFaults[path, default: []] += faults }
    }

    func setPersistentFaults(_ path: String, _ faults: [Fault]) {
        state.withLock { $0.persistentFaults[path] = faults.isEmpty ? nil : faults }
    }

    var requests: [RecordedRequest] { state.withLock { $0.requests } }

    func bodyBytesSent(_ path: String) -> Int {
        state.withLock { $0.bodyBytesSent[path] ?? 0 }
    }

    func record(_ request: RecordedRequest) {
        state.withLock { $0.requests.append(request) }
    }

    /// Adds `count` (negative to correct an earlier addition) to the body bytes sent for `path`.
    func addBodyBytes(_ count: Int, path: String) {
        guard count != 0 else { return }
        state.withLock { $0.bodyBytesSent[path, default: 0] += count }
    }

    /// Takes this request's faults (the next queued one, else the persistent ones), applies a
    /// `replaceResource` fault, and returns the faults with the resource to answer from.
    func takeFaultsAndResource(path: String) -> (FaultSettings, StoredResource?) {
        state.withLock { state -> (FaultSettings, StoredResource?) in
            let faults: [Fault]
            if var queue = state.queuedFaults[path], !queue.isEmpty {
                faults = [queue.removeFirst()]
                state.queuedFaults[path] = queue
            } else {
                faults = state.persistentFaults[path] ?? []
            }
            let settings = FaultSettings(faults)
            if let replacement = settings.replacement {
                let old = state.resources[path]
                state.resources[path] = StoredResource(
                    body: replacement.body,
                    etag: replacement.etag,
                    lastModified: replacement.lastModified,
                    contentType: old?.contentType ?? "application/octet-stream",
                    extraHeaders: old?.extraHeaders ?? [])
            }
            return (settings, state.resources[path])
        }
    }
}
