import Foundation
import HaulCore
import HaulEngine
import HaulStore
import Synchronization

/// The cookies of one run of a download: read from its cookie file when it starts, given to every
/// request it sends (each hop of a redirect, each retry, each segment connection), fed every
/// response head (redirects included), and written to its cookie jar when it ends.
final class CookieSession: Sendable {
    private let jar: Mutex<CookieJar>
    /// Where the cookies are written at the end; nil when only read.
    let jarPath: String?
    /// The cookie file they were read from, if any.
    let filePath: String?

    /// Reads the cookie file and checks that the jar can be written: a problem with either stops
    /// the download before anything is sent (a usage error: the option names a wrong file).
    init(file: String?, jar jarPath: String?) throws(DownloadError) {
        var jar = CookieJar()
        do {
            if let file { jar = try CookieFile.load(file) }
            if let jarPath { try CookieFile.checkWritable(jarPath) }
        } catch {
            throw DownloadError(.usage, SettingText(error.message))
        }
        self.jar = Mutex(jar)
        self.jarPath = jarPath
        self.filePath = file
    }

    static var now: Int64 { Int64(Date().timeIntervalSince1970) }

    /// The `Cookie` header value for a request to `url`, or nil.
    func header(for url: URL) -> String? {
        jar.withLock { $0.header(for: url, now: Self.now) }
    }

    /// Takes in the `Set-Cookie` fields of a response from `url`.
    func receive(_ head: ResponseHead, from url: URL) {
        jar.withLock { $0.receive(head.headers, from: url, now: Self.now) }
    }

    /// Writes the jar, merged into what its file holds by now; nothing without a jar path.
    func save() throws(DownloadError) {
        guard let jarPath else { return }
        let cookies = jar.withLock { $0 }
        do {
            let readFromIt = filePath.map { AbsolutePath.of($0) == AbsolutePath.of(jarPath) } ?? false
            try CookieFile.save(cookies, to: jarPath, readFromIt: readFromIt, now: Self.now)
        } catch {
            throw DownloadError(.io, "cannot write the cookie jar: \(error.message)")
        }
    }
}

/// A transport that sends a session's cookies with each request and gives it each response head.
///
/// The cookies go only into the request on the wire: the request the download keeps (and derives
/// redirects and segment requests from) stays the user's, so cookies are chosen afresh for every
/// host and path, by the jar's rules, and never carried to another origin.
struct CookieTransport: HTTPTransport {
    let base: any HTTPTransport
    let session: CookieSession

    func perform(_ request: TransferRequest, options: TransferOptions, handler: any TransferHandler) -> TransferOutcome {
        base.perform(withCookies(request), options: options, handler: CookieRecorder(inner: handler, session: session, url: request.url))
    }

    func transfer(_ request: TransferRequest, options: TransferOptions, handler: any TransferHandler, handlerMayBlock: Bool) async -> TransferOutcome {
        await base.transfer(
            withCookies(request), options: options, handler: CookieRecorder(inner: handler, session: session, url: request.url),
            handlerMayBlock: handlerMayBlock)
    }

    func wake() {
        base.wake()
    }

    var hasBackpressure: Bool { base.hasBackpressure }

    /// The request with the jar's cookies for its URL.
    private func withCookies(_ request: TransferRequest) -> TransferRequest {
        var wire = request
        if let cookies = session.header(for: request.url) {
            // A `Cookie` header of the user's own (-H) comes first, in the one field HTTP/1.1 allows.
            let own = request.headers.fields.filter { $0.name.lowercased() == "cookie" }.map(\.value)
            wire.headers.set("Cookie", (own + [cookies]).joined(separator: "; "))
        }
        return wire
    }
}

/// Hands a response head to the session before the download's own handler sees it.
private final class CookieRecorder: TransferHandler {
    let inner: any TransferHandler
    let session: CookieSession
    let url: URL

    init(inner: any TransferHandler, session: CookieSession, url: URL) {
        self.inner = inner
        self.session = session
        self.url = url
    }

    func transferDidReceiveHead(_ head: ResponseHead) -> TransferControl {
        session.receive(head, from: url)
        return inner.transferDidReceiveHead(head)
    }

    func transferDidReceiveBody(_ chunk: UnsafeRawBufferPointer) -> TransferControl {
        inner.transferDidReceiveBody(chunk)
    }

    func transferShouldAbort() -> Bool {
        inner.transferShouldAbort()
    }

    // Forwarded, or the download it wraps is never parked: its chunk would wait on the loop.
    func secondsBeforeNextChunk() -> Double {
        inner.secondsBeforeNextChunk()
    }
}
