import Foundation
import HaulCore

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The delegate methods: they run on the session's serial delegate queue, in the order
/// FoundationNetworking queued them (heads, then body chunks, then the end).
extension URLSessionTransferContext {
    /// Keeps the head for later: FoundationNetworking calls this for every header block, an
    /// interim 1xx and a proxy's "200 Connection established" included. Its disposition is
    /// ignored for HTTP there; a stop goes through `cancel`.
    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let final = state.withLock { state -> HTTPURLResponse? in
            state.lastActivity = .now
            guard let http = response as? HTTPURLResponse, !(100..<200).contains(http.statusCode) else { return nil }
            state.response = http
            return http
        }
        if let final, let refusal = Self.refusal(of: URLSessionErrors.head(of: final)) {
            _ = stop(dataTask, failure: refusal)
        }
        completionHandler(.allow)
    }

    /// A head this engine cannot pass on faithfully: a compressed 2xx body, which URLSession would
    /// decode, so the bytes written would not be the bytes the server sent (neither a resume by
    /// range nor a digest of the representation could trust them).
    static func refusal(of head: ResponseHead) -> TransportError? {
        guard let coding = head.contentEncoding, (200..<300).contains(head.status) else { return nil }
        let text: SettingText =
            "the server sent a compressed (\(coding)) body although Haul asked for identity, and URLSession decodes it by itself: refused (\(setting: .curlEngine) stores it as sent)"
        return TransportError(.protocolViolation, text)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard deliverHead(task: dataTask) else { return }
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
            // A speed limit waits here, on the delegate queue: this session reads on meanwhile
            // (no backpressure), which is why a limit is refused unless none is set yet.
            if let pacer = options.pacer, !TransferPacing.waitOnThisThread(for: pacer, shouldStop: { handler.transferShouldAbort() }) {
                return .stop
            }
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

    /// Never answers a challenge: the 401 (its body already handed over) is the response Haul
    /// judges. FoundationNetworking asks only after the body has loaded, and then never completes
    /// a task whose challenge gets default handling, so the transfer ends here.
    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        _ = deliverHead(task: task)
        state.withLock { $0.loadedBeforeChallenge = true }
        completionHandler(.cancelAuthenticationChallenge, nil)
        done.signal()
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        if error == nil { _ = deliverHead(task: task) }
        state.withLock { $0.error = error }
        done.signal()
    }

    /// What to do with the head when a body chunk or the end arrives.
    private enum HeadStep {
        case alreadyDelivered
        case transferEnded
        case deliver(HTTPURLResponse?)
    }

    /// Hands the final head to the handler, once; false when the transfer is to end.
    private func deliverHead(task: URLSessionTask) -> Bool {
        let step = state.withLock { state -> HeadStep in
            if state.stoppedByHandler || state.failure != nil { return .transferEnded }
            if state.headDelivered { return .alreadyDelivered }
            state.headDelivered = true
            return .deliver(state.response ?? task.response as? HTTPURLResponse)
        }
        let response: HTTPURLResponse
        switch step {
        case .alreadyDelivered: return true
        case .transferEnded: return false
        case .deliver(nil): return stop(task, failure: TransportError(.protocolViolation, "the server sent no HTTP response head"))
        case .deliver(let head?): response = head
        }
        let head = URLSessionErrors.head(of: response)
        if let refusal = Self.refusal(of: head) { return stop(task, failure: refusal) }
        guard callHandler({ $0.transferDidReceiveHead(head) }) == .proceed else {
            state.withLock { $0.stoppedByHandler = true }
            cancel(task)
            return false
        }
        return true
    }
}
