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
package final class URLSessionTransport: HTTPTransport {
    /// Past this many chunks received and not yet written, the transfer is ended (retryable: the
    /// download resumes by range). FoundationNetworking reads on without waiting for the delegate,
    /// so this is the only bound on memory there: chunks are at most libcurl's 16 KiB on Linux.
    package let maxQueuedChunks: Int

    /// The default bound on chunks waiting to be written: 32 MiB of 16 KiB chunks.
    package static let defaultMaxQueuedChunks = 2048

    /// A URLSession engine that ends a transfer once `maxQueuedChunks` chunks wait to be written.
    package init(maxQueuedChunks: Int = defaultMaxQueuedChunks) {
        self.maxQueuedChunks = maxQueuedChunks
    }

    /// False on Linux: FoundationNetworking queues every chunk for the delegate without waiting.
    package var hasBackpressure: Bool { TransportEngine.urlsession.hasBackpressure }

    package func perform(_ request: TransferRequest, options: TransferOptions, handler: any TransferHandler) -> TransferOutcome {
        if let refusal = TransportEngine.urlsession.refusal(of: options, for: request.url) {
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
        // Like a cancel, it may wait for FoundationNetworking's shared work queue.
        DispatchQueue.global().async { session.invalidateAndCancel() }
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
        let week: Double = 7 * 24 * 3600
        configuration.timeoutIntervalForRequest = options.stallTimeout.map { max($0, options.connectTimeout ?? 0) * 2 + 30 } ?? week
        configuration.timeoutIntervalForResource = week
        return configuration
    }

    /// The request exactly as Haul built it, with the `Accept` libcurl would add.
    static func urlRequest(_ request: TransferRequest) -> URLRequest {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        urlRequest.cachePolicy = .reloadIgnoringLocalAndRemoteCacheData
        // An empty value asks libcurl to leave a header out; URLSession would send it empty.
        for field in request.headers where !field.value.isEmpty {
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
}
