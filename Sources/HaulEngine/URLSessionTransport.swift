import Foundation
import HaulCore

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Foundation's `URLSession` behind the same seam as libcurl: the Apple path, and on Linux
/// (FoundationNetworking) a second engine that passes the same conformance suite.
///
/// Each `perform` runs one data task in a session of its own, whose delegate hands every chunk to
/// the handler and writes it before the next one (the delegate queue is serial). Redirects are
/// declined and handed back as the 3xx response, so Haul's own redirect policy decides, as with
/// libcurl. Stall detection and the handler's abort poll run on the calling thread, which waits.
/// What it cannot do is listed in ``limitations`` and refused, never ignored.
public final class URLSessionTransport: HTTPTransport {
    /// Past this many chunks received and not yet written, the transfer is ended (retryable: the
    /// download resumes by range). FoundationNetworking reads on without waiting for the delegate,
    /// so this is the only bound on memory there: chunks are at most libcurl's 16 KiB on Linux.
    public let maxQueuedChunks: Int

    /// A URLSession engine that ends a transfer once `maxQueuedChunks` chunks wait to be written.
    public init(maxQueuedChunks: Int = 2048) {
        self.maxQueuedChunks = maxQueuedChunks
    }

    /// False on Linux: FoundationNetworking queues every chunk for the delegate without waiting.
    public var hasBackpressure: Bool { TransportEngine.urlsession.hasBackpressure }

    public func perform(_ request: TransferRequest, options: TransferOptions, handler: any TransferHandler) -> TransferOutcome {
        if let refusal = TransportEngine.urlsession.refusal(of: options) {
            return .failed(TransportError(.optionRefused, refusal))
        }
        guard let scheme = request.url.scheme?.lowercased(), scheme == "http" || scheme == "https", request.url.host != nil else {
            return .failed(TransportError(.invalidURL, "only http and https URLs can be downloaded: \(Redaction.url(request.url))"))
        }
        let context = URLSessionTransferContext(handler: handler, options: options)
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.name = "haul-urlsession"
        let session = URLSession(configuration: Self.configuration(options), delegate: context, delegateQueue: queue)
        let task = session.dataTask(with: Self.urlRequest(request))
        task.resume()
        let outcome = context.wait(for: task, queue: queue, maxQueuedChunks: maxQueuedChunks)
        session.invalidateAndCancel()
        return outcome
    }

    /// A session that leaves cookies, caches and credentials to Haul.
    static func configuration(_ options: TransferOptions) -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        configuration.urlCache = nil
        configuration.urlCredentialStorage = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalAndRemoteCacheData
        // Stalls are detected by the waiting thread (`URLSessionTransferContext.wait`); URLSession's
        // own idle timer only backs it up, well after it.
        let stall = max(options.stallTimeout ?? 0, options.connectTimeout ?? 0)
        configuration.timeoutIntervalForRequest = stall > 0 ? stall * 2 + 30 : 7 * 24 * 3600
        configuration.timeoutIntervalForResource = 7 * 24 * 3600
        return configuration
    }

    /// The request exactly as Haul built it, with the `Accept` libcurl would add.
    static func urlRequest(_ request: TransferRequest) -> URLRequest {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        urlRequest.cachePolicy = .reloadIgnoringLocalAndRemoteCacheData
        for field in request.headers {
            urlRequest.addValue(field.value, forHTTPHeaderField: field.name)
        }
        if !request.headers.contains("Accept") {
            urlRequest.setValue("*/*", forHTTPHeaderField: "Accept")
        }
        if let body = request.body {
            urlRequest.httpBody = Data(body)
        }
        return urlRequest
    }

    /// What URLSession cannot do on this platform; the command line and every `perform` refuse
    /// the options named here.
    public static var limitations: [EngineLimitation] {
        #if canImport(FoundationNetworking)
            return [
                EngineLimitation(
                    need: .caFile,
                    text: "FoundationNetworking trusts only the system's CA bundle: a CA file (--cacert) cannot be added"),
                EngineLimitation(
                    need: .insecureTLS, text: "FoundationNetworking always verifies certificates: --insecure cannot be honoured"),
                EngineLimitation(
                    need: .proxy,
                    text:
                        "FoundationNetworking takes no proxy setting (its libcurl reads http_proxy and https_proxy from the environment by itself): --proxy cannot be honoured"
                ),
                EngineLimitation(need: .noProxy, text: "FoundationNetworking takes no --noproxy list (no_proxy in the environment applies)"),
                EngineLimitation(need: .netrc, text: "FoundationNetworking reads no netrc file"),
                EngineLimitation(
                    need: nil,
                    text:
                        "FoundationNetworking decodes a compressed body by itself, so a server that answers gzip to 'Accept-Encoding: identity' is refused instead of storing other bytes than it sent"
                ),
                EngineLimitation(
                    need: nil,
                    text:
                        "FoundationNetworking reads on while a chunk is written (no backpressure): past \(2048 * 16 / 1024) MiB not yet written the transfer is ended and resumed by range; --limit-rate is refused"
                ),
                EngineLimitation(
                    need: nil,
                    text: "response headers arrive merged by name (several Set-Cookie fields become one); the order of fields is lost"),
                EngineLimitation(need: nil, text: "HTTP/2 is negotiated on TLS whenever the server offers it (--http2 cannot be turned off)"),
            ]
        #else
            return [
                EngineLimitation(need: .caFile, text: "a CA file (--cacert) is not wired to URLSession's trust evaluation"),
                EngineLimitation(need: .insecureTLS, text: "--insecure is not wired to URLSession's trust evaluation"),
                EngineLimitation(need: .proxy, text: "--proxy is not wired to URLSession (the system's proxy settings apply)"),
                EngineLimitation(need: .noProxy, text: "--noproxy is not wired to URLSession (the system's proxy settings apply)"),
                EngineLimitation(need: .netrc, text: "URLSession reads no netrc file"),
            ]
        #endif
    }
}
