import Foundation
import HaulCore
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One `URLSessionTransport.perform`: the task's delegate (`+Delegate`), and the state the
/// waiting thread reads.
///
/// Every handler call holds `handlerLock`, so the handler is called by one thread at a time (the
/// delegate queue's, or the waiting thread's abort poll) and never after `perform` returned; the
/// handler is let go of then, so whatever it owns is not kept alive by the session.
final class URLSessionTransferContext: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    struct State {
        /// The last final (non-1xx) response head seen; handed over at the first body byte or at
        /// the end, so an interim head or a proxy's CONNECT answer is never taken for it.
        var response: HTTPURLResponse?
        var headDelivered = false
        var stoppedByHandler = false
        var failure: TransportError?
        var error: (any Error)?
        var lastActivity = ContinuousClock.now
        var lastAbortPoll = ContinuousClock.now
        /// The response loaded completely, then came an authentication challenge (which ends it).
        var loadedBeforeChallenge = false
    }

    let options: TransferOptions
    let state = Mutex(State())
    let done = DispatchSemaphore(value: 0)
    private let handlerLock = NSLock()
    /// Under `handlerLock`; nil once `perform` returned: the handler is not called after that.
    private var handler: (any TransferHandler)?
    /// Every cancel, and the answer to a redirect, hold this: FoundationNetworking traps when a
    /// redirect is answered after the task was cancelled.
    let cancelLock = NSLock()
    /// Under `cancelLock`.
    var cancelRequested = false

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
                // task.cancel() waits for FoundationNetworking's work queue, which one process
                // shares for every session and which may be busy (buffering a 3xx body, say):
                // from another thread, so this one keeps its deadline.
                DispatchQueue.global().async { self.cancel(task) }
                cancelled = .now
            }
        }
        handlerLock.withLock { handler = nil }
        return outcome()
    }

    /// Asks the handler whether to stop, unless it is busy with a chunk (which polls it too).
    private func pollAbort() -> Bool {
        guard handlerLock.try() else { return false }
        defer { handlerLock.unlock() }
        guard let handler, handler.transferShouldAbort() else { return false }
        state.withLock { $0.stoppedByHandler = true }
        return true
    }

    /// A stall, no response in time, or more chunks waiting for the handler than memory should
    /// hold: ends the transfer.
    private func check(queuedChunks: Int, max: Int) -> Bool {
        state.withLock { state in
            guard !state.stoppedByHandler, state.failure == nil else { return true }
            let idle = ContinuousClock.now - state.lastActivity
            // This engine cannot tell connecting from waiting for the head: until a response
            // arrives, the connect timeout bounds both (as the stall timeout does too).
            if state.response == nil, let connect = options.connectTimeout, connect < (options.stallTimeout ?? .infinity),
                idle > .milliseconds(Int64(connect * 1000))
            {
                state.failure = TransportError(.timeout, "no response within \(Self.format(connect)) seconds (connecting or waiting for the server)")
                return true
            }
            if let stall = options.stallTimeout, idle > .milliseconds(Int64(stall * 1000)) {
                state.failure = TransportError(.stalled, "no data received for \(Self.format(stall)) seconds")
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

    // MARK: Shared with the delegate

    func stop(_ task: URLSessionTask, failure: TransportError) -> Bool {
        state.withLock { $0.failure = failure }
        cancel(task)
        return false
    }

    func cancel(_ task: URLSessionTask) {
        cancelLock.withLock {
            cancelRequested = true
            task.cancel()
        }
    }

    /// Calls the handler unless `perform` already returned (then: stop).
    func callHandler(_ body: (any TransferHandler) -> TransferControl) -> TransferControl {
        handlerLock.withLock { handler.map(body) ?? .stop }
    }

    static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }
}
