import Foundation

/// A response to send: status, header fields and body. `Content-Length` and `Connection` are
/// added when it is serialized, from the body and from what becomes of the connection.
struct HTTPResponse: Sendable, Equatable {
    let status: Int
    let headers: [HTTPHeader]
    let body: Data
    /// The length announced when it differs from the body sent (a HEAD answer has no body).
    let announcedLength: Int?

    init(status: Int, headers: [HTTPHeader] = [], body: Data = Data(), announcedLength: Int? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.announcedLength = announcedLength
    }

    /// A plain-text answer the server makes itself (a malformed request, a full server).
    static func text(_ status: Int, _ message: String) -> HTTPResponse {
        HTTPResponse(
            status: status,
            headers: [
                HTTPHeader(name: "Content-Type", value: "text/plain; charset=utf-8"), HTTPHeader(name: "Cache-Control", value: "no-store"),
                HTTPHeader(name: "X-Content-Type-Options", value: "nosniff"),
            ],
            body: Data((message + "\n").utf8))
    }

    /// The bytes on the wire. `connection` is the value of a `Connection` field to add (`close`
    /// when the server closes after it, `keep-alive` for an HTTP/1.0 client that asked), if any.
    /// The answer to a HEAD request (`toHEAD`) announces its body's length and sends no body: a
    /// body sent would be read as the start of the next answer on the connection.
    /// `lengthKnown` false: no `Content-Length` (a body that runs until the connection closes).
    func serialized(connection: String?, toHEAD: Bool = false, lengthKnown: Bool = true) -> Data {
        var head = "HTTP/1.1 \(status) \(Self.reason(status))\r\n"
        for header in headers { head += "\(header.name): \(header.value)\r\n" }
        // RFC 9110 section 8.6: no Content-Length on 1xx and 204.
        if lengthKnown, status >= 200, status != 204, status != 304 { head += "Content-Length: \(announcedLength ?? body.count)\r\n" }
        if let connection { head += "Connection: \(connection)\r\n" }
        head += "\r\n"
        var bytes = Data(head.utf8)
        if !toHEAD { bytes.append(body) }
        return bytes
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 100: return "Continue"
        case 101: return "Switching Protocols"
        case 200: return "OK"
        case 204: return "No Content"
        case 206: return "Partial Content"
        case 304: return "Not Modified"
        case 401: return "Unauthorized"
        case 400: return "Bad Request"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 409: return "Conflict"
        case 408: return "Request Timeout"
        case 411: return "Length Required"
        case 410: return "Gone"
        case 413: return "Payload Too Large"
        case 412: return "Precondition Failed"
        case 416: return "Range Not Satisfiable"
        case 417: return "Expectation Failed"
        case 426: return "Upgrade Required"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 503: return "Service Unavailable"
        case 505: return "HTTP Version Not Supported"
        default: return "Error"
        }
    }
}
