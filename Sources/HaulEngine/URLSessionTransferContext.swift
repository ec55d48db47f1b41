import Foundation
import HaulCore
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One `URLSessionTransport.perform`: the task's delegate, and the state the waiting thread reads.
///
/// Every handler call holds `handlerLock`, so the handler is called by one thread at a time (the
/// delegate queue's, or the waiting thread's abort poll) and never after `perform` returned.
final class URLSessionTransferContext: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private struct State {
        var headDelivered = false
        var stoppedByHandler = false
        var failure: TransportError?
        var error: (any Error)?
        var lastActivity = ContinuousClock.now
        var lastAbortPoll = ContinuousClock.now
        /// The response loaded completely, then came an authentication challenge (which ends it).
        var loadedBeforeChallenge = false
    }

    private let handler: any TransferHandler
    private let options: TransferOptions
    private let handlerLock = NSLock()
    /// Under `handlerLock`: set when `perform` returns; the handler is not called after that.
    private var closed = false
    private let state = Mutex(State())
    private let done = DispatchSemaphore(value: 0)
    /// Every cancel, and the answer to a redirect, hold this: FoundationNetworking traps when a
    /// redirect is answered after the task was cancelled.
    private let cancelLock = NSLock()
    /// Under `cancelLock`.
    private var cancelRequested = false

    init(handler: any TransferHandler, options: TransferOptions) {
        self.handler = handler
        self.options = options
    }

    // MARK: The waiting thread

    /// Waits for the task to end, polling the handler's abort and watching for a stall or a
    /// backlog the handler cannot keep up with; then closes the handler off.
    func wait(for task: URLSessionDataTask, queue: OperationQueue, maxQueuedChunks: Int) -> TransferOutcome {
        var cancelled: ContinuousClock.Instant?
        while done.wait(timeout: .now() + .milliseconds(50)) == .timedOut {
            if let cancelled {
                // The task's completion should follow a cancel at once; never wait forever on it.
                if ContinuousClock.now - cancelled > .seconds(10) { break }
                continue
            }
            if pollAbort() || check(queuedChunks: queue.operationCount, max: maxQueuedChunks) {
                cancel(task)
                cancelled = .now
            }
        }
        handlerLock.withLock { closed = true }
        return outcome()
    }

    /// Asks the handler whether to stop, unless it is busy with a chunk (which polls it too).
    private func pollAbort() -> Bool {
        guard handlerLock.try() else { return false }
        defer { handlerLock.unlock() }
        guard !closed, handler.transferShouldAbort() else { return false }
        state.withLock { $0.stoppedByHandler = true }
        return true
    }

    /// A stall, or more chunks waiting for the handler than memory should hold: ends the transfer.
    private func check(queuedChunks: Int, max: Int) -> Bool {
        state.withLock { state in
            guard !state.stoppedByHandler, state.failure == nil else { return true }
            let idle = ContinuousClock.now - state.lastActivity
            if let stall = options.stallTimeout, idle > .milliseconds(Int64(stall * 1000)) {
                state.failure = TransportError(.stalled, "no data received for \(Self.format(stall)) seconds")
                return true
            }
            if !state.headDelivered, options.stallTimeout == nil, let connect = options.connectTimeout,
                idle > .milliseconds(Int64(connect * 1000))
            {
                state.failure = TransportError(.timeout, "no response within \(Self.format(connect)) seconds")
                return true
            }
            if queuedChunks > max {
                state.failure = TransportError(
                    .connectionLost,
                    "URLSession received data faster than it could be written (\(queuedChunks) chunks waiting; it has no backpressure here): the rest is fetched again by range"
                )
                return true
            }
            return false
        }
    }

    private func outcome() -> TransferOutcome {
        state.withLock { state in
            if let failure = state.failure { return .failed(failure) }
            if state.stoppedByHandler { return .stoppedByHandler }
            if state.loadedBeforeChallenge, state.headDelivered { return .completed }
            if let error = state.error { return .failed(URLSessionErrors.transportError(error, afterHead: state.headDelivered)) }
            if !state.headDelivered {
                return .failed(TransportError(.protocolViolation, "the server closed the connection without a complete response"))
            }
            return .completed
        }
    }

    // MARK: The delegate queue

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let proceed = deliverHead(of: response, task: dataTask)
        completionHandler(proceed ? .allow : .cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        if !state.withLock({ $0.headDelivered }), let response = dataTask.response {
            guard deliverHead(of: response, task: dataTask) else { return }
        }
        let now = ContinuousClock.now
        let pollDue = state.withLock { state -> Bool? in
            guard !state.stoppedByHandler, state.failure == nil else { return nil }
            state.lastActivity = now
            guard now - state.lastAbortPoll > .milliseconds(100) else { return false }
            state.lastAbortPoll = now
            return true
        }
        guard let pollDue else { return }
        let control = callHandler { handler in
            if pollDue, handler.transferShouldAbort() { return .stop }
            return data.withUnsafeBytes { handler.transferDidReceiveBody($0) }
        }
        if control != .proceed {
            state.withLock { $0.stoppedByHandler = true }
            cancel(dataTask)
        }
    }

    /// Declines every redirect: the 3xx then arrives as the response (head and body), and Haul's
    /// redirect policy decides. Not answered once the task is cancelled (the cancel ends it).
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        cancelLock.withLock {
            if !cancelRequested { completionHandler(nil) }
        }
    }

    /// Never answers a challenge: the 401 (head and body, already handed over) is the response
    /// Haul judges. FoundationNetworking asks only after the body has loaded, and then never
    /// completes a task whose challenge gets default handling, so the transfer ends here.
    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        state.withLock { $0.loadedBeforeChallenge = true }
        completionHandler(.cancelAuthenticationChallenge, nil)
        done.signal()
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        if error == nil, !state.withLock({ $0.headDelivered }), let response = task.response {
            _ = deliverHead(of: response, task: task)
        }
        state.withLock { $0.error = error }
        done.signal()
    }

    /// Hands the head to the handler once; false when the transfer is to end.
    private func deliverHead(of response: URLResponse, task: URLSessionTask) -> Bool {
        let already = state.withLock { state -> Bool in
            defer { state.headDelivered = true }
            state.lastActivity = .now
            return state.headDelivered || state.stoppedByHandler || state.failure != nil
        }
        guard !already else { return !state.withLock { $0.stoppedByHandler || $0.failure != nil } }
        guard let http = response as? HTTPURLResponse else {
            return stop(task, failure: TransportError(.protocolViolation, "the response is not HTTP"))
        }
        let head = URLSessionErrors.head(of: http)
        if let coding = head.contentEncoding, (200..<300).contains(head.status) {
            // URLSession would decode it: the bytes written would not be the bytes the server sent,
            // which neither a resume by range nor a digest of the representation could trust.
            let text =
                "the server sent a compressed (\(coding)) body although Haul asked for identity, and URLSession decodes it by itself: refused (--engine curl stores it as sent)"
            return stop(task, failure: TransportError(.protocolViolation, text))
        }
        let control = callHandler { $0.transferDidReceiveHead(head) }
        guard control == .proceed else {
            state.withLock { $0.stoppedByHandler = true }
            cancel(task)
            return false
        }
        return true
    }

    private func stop(_ task: URLSessionTask, failure: TransportError) -> Bool {
        state.withLock { $0.failure = failure }
        cancel(task)
        return false
    }

    private func cancel(_ task: URLSessionTask) {
        cancelLock.withLock {
            cancelRequested = true
            task.cancel()
        }
    }

    /// Calls the handler unless `perform` already returned (then: stop).
    private func callHandler(_ body: (any TransferHandler) -> TransferControl) -> TransferControl {
        handlerLock.withLock { closed ? .stop : body(handler) }
    }

    private static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }
}
