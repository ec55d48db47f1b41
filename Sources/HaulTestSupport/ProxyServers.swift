import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A real SOCKS5 proxy, Debian's `microsocks`, on a free loopback port, for tests.
///
/// Its outgoing connections leave from `outgoingAddress`, another loopback address, so a server's
/// log (``NginxAccessLogEntry/clientAddress``) proves whether a request came through it. It logs
/// each connection with the target as the client named it: a host name when the client left the
/// resolution to the proxy (`socks5h://`), an address when it resolved the name itself (`socks5://`).
package final class SocksProxy: Sendable {
    private let daemon: ProxyDaemon
    /// The loopback port it listens on (on 127.0.0.1).
    package var port: Int { daemon.port }
    /// The PID of the microsocks process this object started.
    package var pid: Int32 { daemon.pid }
    /// The address its connections to servers come from.
    package let outgoingAddress: String

    /// Starts `microsocks -i 127.0.0.1 -p PORT -b OUTGOING [-u USER -P PASSWORD]` on a free port and
    /// waits until it accepts connections. With `user` and `password`, clients must log in.
    /// - Throws: ``TestSupportError`` when microsocks is not installed or does not come up.
    package init(outgoingAddress: String = "127.0.0.2", user: String? = nil, password: String? = nil) throws {
        self.outgoingAddress = outgoingAddress
        let executable = try ProxyDaemon.find("microsocks", package: "microsocks")
        let login = user.map { ["-u", $0, "-P", password ?? ""] } ?? []
        daemon = try ProxyDaemon(name: "microsocks", executable: executable) { port, _ in
            (["-i", "127.0.0.1", "-p", String(port), "-b", outgoingAddress] + login, nil)
        }
    }

    deinit {
        stop()
    }

    /// `SCHEME://[USER:PASSWORD@]127.0.0.1:PORT`, for `--proxy` or `all_proxy`.
    package func url(scheme: String = "socks5h", user: String? = nil, password: String? = nil) -> String {
        ProxyDaemon.url(scheme: scheme, user: user, password: password, port: port)
    }

    /// The targets of the connections so far, as clients named them (`localhost:8080`,
    /// `127.0.0.1:8080`): microsocks logs `client[N] ADDRESS: connected to HOST:PORT`.
    package func connectedTargets() -> [String] {
        daemon.log().split(separator: "\n").compactMap { line in
            line.range(of: ": connected to ").map { String(line[$0.upperBound...]) }
        }
    }

    /// Everything microsocks printed, for diagnostics.
    package func log() -> String { daemon.log() }

    /// Stops the process it started (SIGTERM, then SIGKILL) and removes its directory. Idempotent.
    package func stop() { daemon.stop() }
}

/// A real HTTP proxy, Debian's `tinyproxy`, on a free loopback port, for tests: it forwards plain
/// http requests and tunnels https ones (`CONNECT`).
///
/// Its outgoing connections leave from `outgoingAddress`, another loopback address, so a server's
/// log proves whether a request came through it; its own log lists each request it received.
package final class HTTPProxy: Sendable {
    private let daemon: ProxyDaemon
    /// The loopback port it listens on (on 127.0.0.1).
    package var port: Int { daemon.port }
    /// The PID of the tinyproxy process this object started.
    package var pid: Int32 { daemon.pid }
    /// The address its connections to servers come from.
    package let outgoingAddress: String

    /// Starts `tinyproxy -d -c FILE` with a configuration in a fresh temporary directory (listen on
    /// 127.0.0.1 at a free port, connect from `outgoingAddress`, allow only 127.0.0.1, log every
    /// request) and waits until it accepts connections. With `user` and `password`, clients must
    /// send them (`Proxy-Authorization: Basic`).
    /// - Throws: ``TestSupportError`` when tinyproxy is not installed or does not come up.
    package init(outgoingAddress: String = "127.0.0.3", user: String? = nil, password: String? = nil) throws {
        self.outgoingAddress = outgoingAddress
        let executable = try ProxyDaemon.find("tinyproxy", package: "tinyproxy")
        daemon = try ProxyDaemon(name: "tinyproxy", executable: executable) { port, directory in
            let login = user.map { "BasicAuth \($0) \(password ?? "")\n" } ?? ""
            let config = """
                Port \(port)
                Listen 127.0.0.1
                Bind \(outgoingAddress)
                Timeout 60
                Allow 127.0.0.1
                MaxClients 64
                LogLevel Connect
                \(login)
                """
            let path = directory + "/tinyproxy.conf"
            return (["-d", "-c", path], (path, config))
        }
    }

    deinit {
        stop()
    }

    /// `http://[USER:PASSWORD@]127.0.0.1:PORT`, for `--proxy` or `http_proxy`.
    package func url(user: String? = nil, password: String? = nil) -> String {
        ProxyDaemon.url(scheme: "http", user: user, password: password, port: port)
    }

    /// The request lines received so far (`GET http://127.0.0.1:8080/f HTTP/1.1`,
    /// `CONNECT 127.0.0.1:8443 HTTP/1.1`): tinyproxy logs `Request (file descriptor N): LINE`.
    package func requestLines() -> [String] {
        daemon.log().split(separator: "\n").compactMap { line in
            guard line.contains("Request (file descriptor") else { return nil }
            return line.range(of: "): ").map { String(line[$0.upperBound...]) }
        }
    }

    /// Everything tinyproxy logged, for diagnostics.
    package func log() -> String { daemon.log() }

    /// Stops the process it started (SIGTERM, then SIGKILL) and removes its directory. Idempotent.
    package func stop() { daemon.stop() }
}

/// TLS in front of another loopback proxy, for tests of `https://` proxies (TLS from the client to
/// the proxy): a small Python program (`python3`'s ssl module) that terminates TLS with the given
/// certificate on a free port and passes the bytes to `targetPort` (e.g. an ``HTTPProxy``'s).
package final class TLSProxyFront: Sendable {
    private let daemon: ProxyDaemon
    /// The loopback port it listens on (on 127.0.0.1).
    package var port: Int { daemon.port }

    /// - Throws: ``TestSupportError`` when python3 is not installed or the program does not come up.
    package init(certificatePath: String, keyPath: String, targetPort: Int) throws {
        let executable = try ProxyDaemon.find("python3", package: "python3")
        daemon = try ProxyDaemon(name: "tls-front", executable: executable) { port, directory in
            let path = directory + "/tls_front.py"
            return ([path, certificatePath, keyPath, String(port), String(targetPort)], (path, Self.program))
        }
    }

    deinit {
        daemon.stop()
    }

    /// `https://[USER:PASSWORD@]127.0.0.1:PORT`, for `--proxy` or `https_proxy`.
    package func url(user: String? = nil, password: String? = nil) -> String {
        ProxyDaemon.url(scheme: "https", user: user, password: password, port: port)
    }

    /// Stops the process it started and removes its directory. Idempotent.
    package func stop() { daemon.stop() }

    /// One thread per connection, each moving bytes both ways with select (an SSL socket is never
    /// read and written from two threads at once).
    static let program = """
        import select, socket, ssl, sys, threading
        cert, key, port, target = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(64)

        def serve(client):
            try:
                tls = context.wrap_socket(client, server_side=True)
                upstream = socket.create_connection(("127.0.0.1", target))
            except (OSError, ssl.SSLError):
                client.close()
                return
            try:
                while True:
                    readable = [tls] if tls.pending() else select.select([tls, upstream], [], [])[0]
                    for source in readable:
                        data = source.recv(65536)
                        if not data:
                            return
                        (upstream if source is tls else tls).sendall(data)
            except (OSError, ssl.SSLError):
                pass
            finally:
                tls.close()
                upstream.close()

        while True:
            connection, _ = listener.accept()
            threading.Thread(target=serve, args=(connection,), daemon=True).start()

        """
}
