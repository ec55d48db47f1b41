#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The listening sockets of a server: the first address of `host` that binds, and for
/// `localhost` also the loopback address of the other family on the same port when it binds
/// too (a client may try either of `::1` and `127.0.0.1`).
struct Listener: Sendable {
    let descriptors: [Int32]
    /// The port bound (the system's choice when asked for 0).
    let port: Int

    static let backlog: Int32 = 128

    init(host: String, port: Int) throws(ServeError) {
        let failure = ServeError("cannot listen on \(host):\(port) (in use, or not an address of this machine)")
        let addresses = Self.resolve(host: host, port: port)
        var bound: (fd: Int32, family: Int32)?
        for address in addresses {
            let fd = Self.bind(address)
            if fd >= 0 {
                bound = (fd, address.family)
                break
            }
        }
        guard let bound, let actual = Socket.localPort(bound.fd) else { throw failure }
        var descriptors = [bound.fd]
        if host.lowercased() == "localhost" {
            // The other family's loopback, whatever the hosts file says: browsers resolve
            // localhost to both themselves.
            let other = bound.family == AF_INET6 ? "127.0.0.1" : "::1"
            if let address = Self.resolve(host: other, port: actual).first {
                let fd = Self.bind(address)
                if fd >= 0 { descriptors.append(fd) }
            }
        }
        self.descriptors = descriptors
        self.port = actual
    }

    /// Closes every listening socket.
    func close() {
        for fd in descriptors { _ = systemClose(fd) }
    }

    /// One address getaddrinfo gave, copied out of its list.
    private struct Address {
        let family: Int32
        let bytes: [UInt8]
    }

    private static func resolve(host: String, port: Int) -> [Address] {
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Socket.stream
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0 else { return [] }
        defer { freeaddrinfo(list) }
        var addresses: [Address] = []
        var next = list
        while let entry = next {
            if let address = entry.pointee.ai_addr {
                let bytes = UnsafeRawBufferPointer(start: address, count: Int(entry.pointee.ai_addrlen))
                addresses.append(Address(family: entry.pointee.ai_family, bytes: Array(bytes)))
            }
            next = entry.pointee.ai_next
        }
        return addresses
    }

    /// A socket bound to `address` and listening, or -1.
    private static func bind(_ address: Address) -> Int32 {
        let fd = Socket.make(family: address.family)
        guard fd >= 0 else { return -1 }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = address.bytes.withUnsafeBytes { raw in
            raw.baseAddress.map { base in
                #if canImport(Glibc)
                    Glibc.bind(fd, base.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
                #else
                    Darwin.bind(fd, base.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
                #endif
            } ?? -1
        }
        guard bound == 0, listen(fd, backlog) == 0 else {
            _ = systemClose(fd)
            return -1
        }
        return fd
    }
}
