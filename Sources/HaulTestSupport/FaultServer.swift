import Foundation

/// A fault-injecting HTTP/1.1 server on a random loopback port, for tests.
///
/// It serves in-memory resources with correct `Range` / `If-Range` handling (RFC 9110)
/// and can be told to misbehave for chosen requests: drop the connection mid-body,
/// stall, ignore ranges, lie about the length, redirect, answer with errors, and so on.
///
/// Every connection is served on its own thread with blocking sockets, so tests may block
/// freely. Call ``stop()`` (or let the server deinitialise) to close the listener and every
/// live connection.
///
/// ```swift
/// let server = try FaultServer()
/// server.setResource("/file.bin", body: bytes)
/// server.enqueueFaults("/file.bin", [.dropAfter(bytes: 1000)])
/// // first GET /file.bin is cut after 1000 body bytes, the next ones are served normally
/// ```
package final class FaultServer: Sendable {
    /// The shared core the server threads hold; the facade owns it so that dropping the
    /// last `FaultServer` reference stops the threads (they never retain the facade).
    private let core: FaultServerCore

    /// The loopback address it listens on.
    package let address: String

    /// Binds `address` (127.0.0.1 unless told another address of 127.0.0.0/8, e.g. to be a
    /// second host) on a random port and starts accepting connections.
    /// - Throws: ``FaultServerError`` when the listening socket cannot be set up.
    package init(address: String = "127.0.0.1") throws {
        var parsed = in_addr()
        guard inet_pton(AF_INET, address, &parsed) == 1, UInt32(bigEndian: parsed.s_addr) >> 24 == 127 else {
            throw FaultServerError(operation: "inet_pton(\(address)): not a loopback address", code: EINVAL)
        }
        self.address = address
        core = try FaultServerCore(address: parsed)
        core.start()
    }

    deinit {
        core.stop()
    }

    /// The TCP port the server listens on.
    package var port: Int { core.port }

    /// `"http://ADDRESS:PORT"`, without a trailing slash.
    package var baseURL: String { "http://\(address):\(port)" }

    /// `baseURL + path`; `path` should start with `/`.
    package func url(_ path: String) -> String { baseURL + path }

    /// Closes the listener and every live connection, and waits for the server threads to end.
    /// Calling it more than once is harmless.
    package func stop() { core.stop() }

    /// Serve `body` at `path` (exact match of the path, query string ignored for matching).
    /// etag nil means no ETag header; lastModified nil means no Last-Modified header.
    ///
    /// - Parameters:
    ///   - path: the request path, starting with `/`, without a query string.
    ///   - body: the representation's bytes.
    ///   - etag: the raw `ETag` value including quotes (and `W/` for a weak tag), or nil.
    ///   - lastModified: the raw `Last-Modified` value (an HTTP date), or nil.
    ///   - contentType: the `Content-Type` value.
    ///   - extraHeaders: further headers added to every normal response for this resource.
    package func setResource(
        _ path: String,
        body: [UInt8],
        etag: String? = "\"v1\"",
        lastModified: String? = nil,
        contentType: String = "application/octet-stream",
        extraHeaders: [(String, String)] = []
    ) {
        let resource = StoredResource(
            body: body, etag: etag, lastModified: lastModified,
            contentType: contentType, extraHeaders: extraHeaders)
        core.setResource(path, resource)
    }

    /// A character that a response head carries as the single byte `byte`, whatever it is (a
    /// head is otherwise written as UTF-8): how a test sends a header value that is not UTF-8,
    /// such as an ETag with the byte 0xFF. U+F700 + byte, from the Private Use Area.
    package static func rawByte(_ byte: UInt8) -> Character {
        Character(Unicode.Scalar(0xF700 + UInt32(byte)) ?? " ")
    }

    /// The bytes of a response head: UTF-8, with each `rawByte` as its byte.
    static func wireBytes(_ head: String) -> [UInt8] {
        var bytes: [UInt8] = []
        for scalar in head.unicodeScalars {
            if (0xF700...0xF7FF).contains(scalar.value) {
                bytes.append(UInt8(scalar.value - 0xF700))
            } else {
                bytes.append(contentsOf: String(scalar).utf8)
            }
        }
        return bytes
    }

    /// Faults for the next requests to `path`, consumed one per request in order; once consumed,
    /// requests are served normally (or with the persistent faults, if any).
    /// Use ``Fault/combined(_:)`` to give one request several faults.
    package func enqueueFaults(_ path: String, _ faults: [Fault]) {
        core.enqueueFaults(path, faults)
    }

    /// Faults applied together to every request to `path` (after queued ones are used up).
    /// An empty array clears them.
    package func setPersistentFaults(_ path: String, _ faults: [Fault]) {
        core.setPersistentFaults(path, faults)
    }

    /// Every request received, in order (recorded once its body has been read, before the answer).
    package var requests: [RecordedRequest] { core.requests }

    /// Total response body bytes of the resource at `path` that `send()` accepted, over all
    /// requests (query strings ignored). Error pages, redirects and 404s are not counted.
    package func bodyBytesSent(_ path: String) -> Int { core.bodyBytesSent(path) }
}

/// One request as the server received it.
package struct RecordedRequest: Sendable {
    /// The request method, as sent (`GET`, `HEAD`, `POST`, ...).
    package let method: String
    /// The request target including the query string, e.g. `/file.bin?x=1`.
    package let path: String
    /// The header fields in the order received, names as sent.
    package let headers: [(name: String, value: String)]
    /// The request body (decoded if it was sent chunked); empty when there was none.
    package let body: [UInt8]

    /// The value of the first header named `name`, compared case-insensitively.
    package func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }
}

/// One request's behaviour. Combine several for one request with ``combined(_:)``.
package enum Fault: Sendable {
    /// Serve normally.
    case normal
    /// Answer 200 with the whole body even if `Range` was sent.
    case ignoreRange
    /// Honour `Range` even when `If-Range` does not match the current resource: a broken server
    /// or cache that answers 206 with bytes of a newer version than the client holds.
    /// Combine with ``replaceResource(body:etag:lastModified:)`` to change the file first.
    case ignoreIfRange
    /// Send no `ETag` and no `Last-Modified` header (the stored validators still judge `If-Range`),
    /// like a server that cannot tell one version of the file from another.
    case withoutValidators
    /// Reply with this status and a small HTML body (and no resource headers).
    case status(Int, body: String = "error page")
    /// Reply 416, with `Content-Range: bytes */TOTAL` or without it.
    case status416(withContentRange: Bool)
    /// Send the headers, then only that many body bytes, then close the socket abruptly.
    case dropAfter(bytes: Int)
    /// Send that many body bytes, then send nothing for `seconds`, then close.
    case stall(afterBytes: Int, seconds: Double)
    /// No `Content-Length`; `Transfer-Encoding: chunked` (16 KiB chunks), still honouring `Range`.
    case chunked
    /// No `Content-Length` and no chunking: the body ends when the connection closes.
    case closeDelimited
    /// Announce `Content-Length` = real + delta, send the real body, then close the connection.
    case wrongContentLength(delta: Int)
    /// Announce the correct length, send `count` garbage bytes after the body, then close.
    case extraBytes(count: Int)
    /// Redirect with this status (301/302/303/307/308) and `Location` exactly as given.
    case redirect(status: Int, location: String)
    /// Add this raw `Content-Disposition` value to a normal response.
    case contentDisposition(String)
    /// Add `Content-Encoding: gzip` (the stored bytes are sent unchanged).
    case gzip
    /// Before answering, replace the stored resource (the file changed on the server), then
    /// answer normally. The content type and extra headers of the old resource are kept.
    case replaceResource(body: [UInt8], etag: String?, lastModified: String?)
    /// Reply with this status, a small HTML body and `Retry-After: value`.
    case retryAfter(status: Int, value: String)
    /// Send the body no faster than this many bytes per second.
    case throttle(bytesPerSecond: Int)
    /// Wait this long before sending the status line.
    case delayHeaders(seconds: Double)
    /// Add this header to the response, whatever it is (a redirect, an error page or the
    /// resource): e.g. `Set-Cookie` on a redirect.
    case header(name: String, value: String)
    /// Send an interim (1xx) head with this status first, e.g. 103 Early Hints or 100 Continue,
    /// then the response as the other faults make it.
    case informational(Int)
    /// Close the connection after reading the request, without a single byte of reply.
    case closeWithoutReply
    /// Write every header line as `Name:value`, without the optional space after the colon.
    case headersWithoutSpace
    /// Several faults for the same request.
    case combined([Fault])
}

/// The listening socket could not be set up.
package struct FaultServerError: Error, CustomStringConvertible {
    /// The system call that failed (`socket`, `bind`, ...).
    package let operation: String
    /// The `errno` it left.
    package let code: Int32

    /// A readable explanation of the failure.
    package var description: String {
        "FaultServer: \(operation) failed: \(String(cString: strerror(code))) (errno \(code))"
    }
}
