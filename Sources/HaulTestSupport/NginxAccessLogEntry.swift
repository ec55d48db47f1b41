/// One line of the access log written by ``NginxServer``.
package struct NginxAccessLogEntry: Sendable, Equatable {
    /// The request URI as sent, with its query string (`$request_uri`).
    package let uri: String
    /// The response status code.
    package let status: Int
    /// Body bytes sent, not counting headers (`$body_bytes_sent`).
    package let bodyBytesSent: Int
    /// The request's `Range` header, or `nil` when it had none.
    package let range: String?
    /// The protocol the request was made with: `HTTP/1.1`, `HTTP/2.0`.
    package let httpProtocol: String
    /// The address the request came from (`$remote_addr`): `127.0.0.1` for a direct connection,
    /// a proxy's outgoing address (``SocksProxy``, ``HTTPProxy``) for one through it.
    package let clientAddress: String

    /// Creates an entry from its fields.
    package init(uri: String, status: Int, bodyBytesSent: Int, range: String?, clientAddress: String = "127.0.0.1", httpProtocol: String = "HTTP/1.1") {
        self.httpProtocol = httpProtocol
        self.uri = uri
        self.status = status
        self.bodyBytesSent = bodyBytesSent
        self.range = range
        self.clientAddress = clientAddress
    }

    /// Parses a line in the `haul_test` format: `$remote_addr $server_protocol $request_uri $status
    /// $body_bytes_sent $http_range`. The Range value may itself contain spaces (`bytes=0-1, 5-9`);
    /// nginx writes `-` when it is absent.
    init?(line: String) {
        let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: false)
        guard fields.count == 6, let status = Int(fields[3]), let bytes = Int(fields[4]) else { return nil }
        self.init(
            uri: String(fields[2]), status: status, bodyBytesSent: bytes,
            range: fields[5] == "-" ? nil : String(fields[5]), clientAddress: String(fields[0]), httpProtocol: String(fields[1]))
    }
}
