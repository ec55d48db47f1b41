/// One line of the access log written by ``NginxServer``.
public struct NginxAccessLogEntry: Sendable, Equatable {
    /// The request URI as sent, with its query string (`$request_uri`).
    public let uri: String
    /// The response status code.
    public let status: Int
    /// Body bytes sent, not counting headers (`$body_bytes_sent`).
    public let bodyBytesSent: Int
    /// The request's `Range` header, or `nil` when it had none.
    public let range: String?
    /// The address the request came from (`$remote_addr`): `127.0.0.1` for a direct connection,
    /// a proxy's outgoing address (``SocksProxy``, ``HTTPProxy``) for one through it.
    public let clientAddress: String

    /// Creates an entry from its fields.
    public init(uri: String, status: Int, bodyBytesSent: Int, range: String?, clientAddress: String = "127.0.0.1") {
        self.uri = uri
        self.status = status
        self.bodyBytesSent = bodyBytesSent
        self.range = range
        self.clientAddress = clientAddress
    }

    /// Parses a line in the `haul_test` format: `$remote_addr $request_uri $status $body_bytes_sent
    /// $http_range`. The Range value may itself contain spaces (`bytes=0-1, 5-9`); nginx writes `-`
    /// when it is absent.
    init?(line: String) {
        let fields = line.split(separator: " ", maxSplits: 4, omittingEmptySubsequences: false)
        guard fields.count == 5, let status = Int(fields[2]), let bytes = Int(fields[3]) else { return nil }
        self.init(
            uri: String(fields[1]), status: status, bodyBytesSent: bytes,
            range: fields[4] == "-" ? nil : String(fields[4]), clientAddress: String(fields[0]))
    }
}
