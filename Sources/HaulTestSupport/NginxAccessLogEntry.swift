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

    /// Creates an entry from its fields.
    public init(uri: String, status: Int, bodyBytesSent: Int, range: String?) {
        self.uri = uri
        self.status = status
        self.bodyBytesSent = bodyBytesSent
        self.range = range
    }

    /// Parses a line in the `haul_test` format: `$request_uri $status $body_bytes_sent $http_range`.
    /// The Range value may itself contain spaces (`bytes=0-1, 5-9`); nginx writes `-` when it is absent.
    init?(line: String) {
        let fields = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false)
        guard fields.count == 4, let status = Int(fields[1]), let bytes = Int(fields[2]) else { return nil }
        self.init(
            uri: String(fields[0]), status: status, bodyBytesSent: bytes,
            range: fields[3] == "-" ? nil : String(fields[3]))
    }
}
