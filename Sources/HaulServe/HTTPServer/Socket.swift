import CHaulSystem

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The socket calls the server makes, each with its platform's spelling (flags Linux takes at
/// creation, Apple platforms by `fcntl`; `MSG_NOSIGNAL` against `SO_NOSIGPIPE`).
enum Socket {
    #if canImport(Glibc)
        static let stream = Int32(SOCK_STREAM.rawValue)
    #else
        static let stream = SOCK_STREAM
    #endif

    /// A new non-blocking, close-on-exec TCP socket of `family`, or -1.
    static func make(family: Int32) -> Int32 {
        #if canImport(Glibc)
            return socket(family, stream | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
            let fd = socket(family, stream, 0)
            if fd >= 0 { configure(fd) }
            return fd
        #endif
    }

    /// The next waiting connection (non-blocking, close-on-exec), or -1 with `errno` set.
    static func accept(_ listener: Int32) -> Int32 {
        let fd = haul_accept_nonblocking(listener)
        if fd >= 0 {
            // Answers are small and whole: send each at once.
            var one: Int32 = 1
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        return fd
    }

    /// A pipe whose ends are non-blocking and close-on-exec: (read end, write end), or nil.
    static func pipe() -> (Int32, Int32)? {
        var ends: [Int32] = [-1, -1]
        guard haul_pipe_nonblocking(&ends) == 0 else { return nil }
        return (ends[0], ends[1])
    }

    #if !canImport(Glibc)
        private static func configure(_ fd: Int32) {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
    #endif

    /// Sends what it can without waiting: bytes sent, 0 when the socket is full, -1 on an error
    /// (the peer gone). Never raises SIGPIPE.
    static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return 0 }
        while true {
            #if canImport(Glibc)
                let sent = Glibc.send(fd, base, bytes.count, Int32(MSG_NOSIGNAL))
            #else
                let sent = Darwin.send(fd, base, bytes.count, 0)
            #endif
            if sent >= 0 { return sent }
            if errno == EINTR { continue }
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1
        }
    }

    /// What one read came to.
    enum Received: Equatable {
        case bytes(Int)
        /// Nothing waiting now.
        case none
        /// The peer closed its side, or the connection failed.
        case ended
    }

    /// Reads what is waiting into `buffer` without waiting.
    static func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Received {
        while true {
            let count = read(fd, buffer.baseAddress, buffer.count)
            if count > 0 { return .bytes(count) }
            if count == 0 { return .ended }
            if errno == EINTR { continue }
            return errno == EAGAIN || errno == EWOULDBLOCK ? .none : .ended
        }
    }

    /// The local port of a bound socket, or nil.
    static func localPort(_ fd: Int32) -> Int? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let got = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard got == 0 else { return nil }
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) } }
        case AF_INET6:
            return withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) } }
        default:
            return nil
        }
    }
}
