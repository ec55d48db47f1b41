#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The listening sockets of a server: the first address of `host` that binds, and for
/// `localhost` also the loopback address of the other family on the same port (a client may try
/// either of `::1` and `127.0.0.1`, browsers the one they prefer first). That one is skipped only
/// where the machine has no such address; taken by another process, it is an error (that
/// process would get the clients that try it first), and on a port of the system's choice
/// another port is chosen.
struct Listener: Sendable {
    let descriptors: [Int32]
    /// The port bound (the system's choice when asked for 0).
    let port: Int

    static let backlog: Int32 = 128

    /// Tries of a port of the system's choice whose other loopback is taken.
    static let portTries = 16

    init(host: String, port: Int) throws(ServeError) {
        var tries = 0
        while true {
            tries += 1
            let failure: OpenFailure
            do throws(OpenFailure) {
                (descriptors, self.port) = try Self.open(host: host, port: port)
                return
            } catch {
                failure = error
            }
            switch failure {
            case .unbound(let inUse?):
                throw ServeError("cannot listen on \(host):\(port): \(inUse) is in use by another process")
            case .unbound(nil):
                throw ServeError("cannot listen on \(host):\(port) (in use, or not an address of this machine)")
            case .otherLoopbackTaken(let address, let taken):
                // Only a port of the system's choice may be chosen again.
                guard port == 0, tries < Self.portTries else {
                    throw ServeError(
                        "cannot listen on localhost:\(taken): \(address) is in use by another process (listen on one address, e.g. --listen 127.0.0.1:\(taken), or choose another port)"
                    )
                }
            }
        }
    }

    private enum OpenFailure: Error {
        /// No address of the host binds; `inUse` names one another socket has.
        case unbound(inUse: String?)
        /// The other loopback address of `localhost` is in use at the port bound on the first.
        case otherLoopbackTaken(address: String, port: Int)
    }

    private static func open(host: String, port: Int) throws(OpenFailure) -> ([Int32], Int) {
        var bound: (fd: Int32, family: Int32)?
        var inUse: String?
        for address in resolve(host: host, port: port) {
            switch bind(address) {
            case .bound(let fd): bound = (fd, address.family)
            case .inUse: inUse = inUse ?? address.description
            case .unavailable: break
            }
            if bound != nil { break }
        }
        guard let bound, let actual = Socket.localPort(bound.fd) else {
            if let bound { _ = systemClose(bound.fd) }
            throw .unbound(inUse: inUse)
        }
        var descriptors = [bound.fd]
        if host.lowercased() == "localhost" {
            // The other family's loopback, whatever the hosts file says: browsers resolve
            // localhost to both themselves.
            let other = bound.family == AF_INET6 ? "127.0.0.1" : "::1"
            if let address = resolve(host: other, port: actual).first {
                switch bind(address) {
                case .bound(let fd):
                    descriptors.append(fd)
                case .inUse:
                    _ = systemClose(bound.fd)
                    throw .otherLoopbackTaken(address: other.contains(":") ? "[\(other)]:\(actual)" : "\(other):\(actual)", port: actual)
                case .unavailable:
                    break
                }
            }
        }
        return (descriptors, actual)
    }

    /// Closes every listening socket.
    func close() {
        for fd in descriptors { _ = systemClose(fd) }
    }

    /// One address getaddrinfo gave, copied out of its list.
    private struct Address: CustomStringConvertible {
        let family: Int32
        let bytes: [UInt8]

        /// `127.0.0.1:6800` or `[::1]:6800`.
        var description: String {
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            let port: UInt16? = bytes.withUnsafeBytes { raw in
                if family == AF_INET6, raw.count >= MemoryLayout<sockaddr_in6>.size {
                    var address = raw.loadUnaligned(as: sockaddr_in6.self)
                    guard inet_ntop(AF_INET6, &address.sin6_addr, &text, socklen_t(text.count)) != nil else { return nil }
                    return UInt16(bigEndian: address.sin6_port)
                }
                guard family == AF_INET, raw.count >= MemoryLayout<sockaddr_in>.size else { return nil }
                var address = raw.loadUnaligned(as: sockaddr_in.self)
                guard inet_ntop(AF_INET, &address.sin_addr, &text, socklen_t(text.count)) != nil else { return nil }
                return UInt16(bigEndian: address.sin_port)
            }
            guard let port else { return "an address" }
            let host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return family == AF_INET6 ? "[\(host)]:\(port)" : "\(host):\(port)"
        }
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

    /// What binding one address came to.
    private enum Binding {
        case bound(Int32)
        /// Another socket has it.
        case inUse
        /// Not an address of this machine, or its family is not supported here.
        case unavailable
    }

    /// A socket bound to `address` and listening.
    private static func bind(_ address: Address) -> Binding {
        let fd = Socket.make(family: address.family)
        guard fd >= 0 else { return .unavailable }
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
            let failure = errno
            _ = systemClose(fd)
            return failure == EADDRINUSE ? .inUse : .unavailable
        }
        return .bound(fd)
    }
}
