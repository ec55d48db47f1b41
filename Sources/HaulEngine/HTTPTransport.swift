import Foundation
import HaulCore

/// The seam between download logic and the network: one request, one response, no redirects followed.
///
/// `perform` blocks the calling thread until the response ends; `transfer` suspends the calling
/// task instead (the libcurl engine runs every such transfer of a process on one event loop,
/// `CurlMultiLoop`; other transports run `perform` on a thread of their own by default). The
/// handler sees the final response head once, then the body in chunks: one call at a time, never
/// after the transfer returned (libcurl calls it on the thread of `perform` or of its event loop,
/// URLSession on its delegate queue). Writing each chunk before returning is what gives
/// backpressure where the transport has it (`hasBackpressure`): it reads no more from the socket
/// until the handler returns, so memory never grows with the file.
package protocol HTTPTransport: Sendable {
    /// Sends `request`, hands its response to `handler` (a 3xx like any other: redirects are not
    /// followed), and returns when the response has ended, failed, or the handler stopped it.
    func perform(_ request: TransferRequest, options: TransferOptions, handler: any TransferHandler) -> TransferOutcome

    /// `perform` without blocking a thread: the task is suspended until the response has ended.
    /// The handler's calls come one at a time on the transport's own thread, never after this
    /// returns. A handler that may block is given `handlerMayBlock`, and then has a thread of its
    /// own rather than holding up other transfers; a speed limit is no reason for one: the
    /// transport keeps it (`TransferOptions.pacer`) without blocking.
    func transfer(_ request: TransferRequest, options: TransferOptions, handler: any TransferHandler, handlerMayBlock: Bool) async -> TransferOutcome

    /// Whether the transport reads no more from the network while the handler is busy with a
    /// chunk: what keeps memory constant on a slow disk, and what a speed limit works through.
    var hasBackpressure: Bool { get }

    /// A stop was requested: a transport that waits for its handler's answer on its own schedule
    /// looks now.
    func wake()
}

extension HTTPTransport {
    /// Transports wait for their handler unless they say otherwise.
    package var hasBackpressure: Bool { true }

    /// By default `perform` on a thread of its own.
    package func transfer(_ request: TransferRequest, options: TransferOptions, handler: any TransferHandler, handlerMayBlock: Bool) async
        -> TransferOutcome
    {
        await performOnThread(request, options: options, handler: handler)
    }

    /// `perform` on a new thread, the task suspended meanwhile.
    package func performOnThread(_ request: TransferRequest, options: TransferOptions, handler: any TransferHandler) async -> TransferOutcome {
        let work = UncheckedTransfer(transport: self, request: request, options: options, handler: handler)
        return await withCheckedContinuation { (continuation: CheckedContinuation<TransferOutcome, Never>) in
            let thread = Thread {
                continuation.resume(returning: work.transport.perform(work.request, options: work.options, handler: work.handler))
            }
            thread.name = "haul-transfer"
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    /// Nothing to wake by default: `transferShouldAbort` is asked as the transfer goes.
    package func wake() {}
}

/// A transfer handed to another thread: the handler is used there alone while its caller waits.
private struct UncheckedTransfer: @unchecked Sendable {
    let transport: any HTTPTransport
    let request: TransferRequest
    let options: TransferOptions
    let handler: any TransferHandler
}

/// Receives one response: one call at a time, none after `perform` returned.
package protocol TransferHandler: AnyObject {
    /// The final (non-1xx) response head. Return `.stop` to end the transfer without reading the body.
    func transferDidReceiveHead(_ head: ResponseHead) -> TransferControl
    /// A chunk of the body, valid only during the call. Return `.stop` to end the transfer.
    func transferDidReceiveBody(_ chunk: UnsafeRawBufferPointer) -> TransferControl
    /// Polled while the transfer runs (also while it waits for bytes): `true` ends it.
    func transferShouldAbort() -> Bool
    /// Asked on the event loop's thread before each body chunk: seconds to park the transfer (its
    /// chunk held by the transport, nothing read from its socket) while the handler waits for
    /// something it must not wait for on that thread (a record being saved on the blocking
    /// pool); 0 to take the chunk now. A handler on a thread of its own is not asked, and may
    /// wait in `transferDidReceiveBody` instead. A handler that wraps another forwards it.
    func secondsBeforeNextChunk() -> Double
}

extension TransferHandler {
    package func secondsBeforeNextChunk() -> Double { 0 }
}

/// Whether a transfer goes on.
package enum TransferControl: Sendable {
    /// Go on reading the response.
    case proceed
    /// End the transfer now; `perform` returns `.stoppedByHandler`.
    case stop
}

/// How one `perform` ended.
package enum TransferOutcome: Sendable, Equatable {
    /// The response ended as HTTP framing says it should.
    case completed
    /// The handler asked to stop (a `.stop` or `transferShouldAbort`).
    case stoppedByHandler
    /// The network or the server failed.
    case failed(TransportError)
}

/// A failure below HTTP: name resolution, connection, TLS, a dropped or stalled transfer.
package struct TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Where the transfer failed.
    package enum Kind: String, Sendable {
        /// The URL cannot be requested (an unsupported scheme, a malformed URL).
        case invalidURL
        /// The host (or the proxy's host) name could not be resolved.
        case nameResolution
        /// No connection could be made to the server or the proxy.
        case connect
        /// The connection, or the whole exchange, took longer than allowed.
        case timeout
        /// No body byte arrived for `TransferOptions.stallTimeout` seconds.
        case stalled
        /// The connection broke while the response was being received.
        case connectionLost
        /// TLS failed: an untrusted or mismatched certificate, or a failed handshake.
        case tls
        /// The response head is larger than the transport accepts.
        case headerTooLarge
        /// The server's reply is not valid HTTP, or ended before its framing said it would.
        case protocolViolation
        /// The engine refused an option the transfer needs (e.g. a libcurl too old for it); nothing was sent.
        case optionRefused
        /// The proxy refused the credentials or the request (a SOCKS login, an unsupported method).
        case proxyRefused
        /// Anything else; the message says what.
        case other
    }

    /// Where the transfer failed.
    package let kind: Kind
    /// What went wrong, for a person, naming the settings that bear on it.
    package let text: SettingText
    /// What went wrong, with the library's names for settings.
    package var message: String { text.description }
    /// The engine's own code for the failure: libcurl's `CURLcode`, or URLSession's `URLError` code.
    package let code: Int?

    /// A failure of `kind` told by `message`, with the engine's code when there is one.
    package init(_ kind: Kind, _ message: String, code: Int? = nil) {
        self.init(kind, SettingText(message), code: code)
    }

    /// A failure of `kind` told by `text`, with the engine's code when there is one.
    package init(_ kind: Kind, _ text: SettingText, code: Int? = nil) {
        self.kind = kind
        self.text = text
        self.code = code
    }

    /// Whether trying again could succeed without anything changing on this side.
    package var isRetryable: Bool {
        switch kind {
        case .nameResolution, .connect, .timeout, .stalled, .connectionLost: return true
        case .invalidURL, .tls, .headerTooLarge, .protocolViolation, .optionRefused, .proxyRefused, .other: return false
        }
    }

    package var description: String { message }
}
