import Foundation
import HaulCore
import HaulEngine

/// The credential files of one run and the transport they shape: the netrc file checked and the
/// cookie file read before anything is sent (every request of the run, redirect hops, retries and
/// segments, then goes through the run's cookie session), the cookie jar written before the end
/// of the run is published. Confined to the download's thread.
final class RunCredentials {
    private let request: DownloadRequest
    /// Every request of the run goes through it; with cookies, through a `CookieTransport`.
    private(set) var transport: any HTTPTransport
    private var cookies: CookieSession?
    /// Writing the jar failed once: the error that says so is on its way out; not tried again.
    private var jarFailed = false

    init(_ request: DownloadRequest, transport: any HTTPTransport) {
        self.request = request
        self.transport = transport
    }

    /// Checks the netrc file and reads the cookie file.
    func open() throws(DownloadError) {
        if let netrcFile = request.transfer.netrcFile { try NetrcFile.check(netrcFile) }
        guard request.cookieFile != nil || request.cookieJar != nil else { return }
        let session = try CookieSession(file: request.cookieFile, jar: request.cookieJar)
        cookies = session
        transport = CookieTransport(base: transport, session: session)
    }

    /// Whether the run writes cookies to a jar when it ends (`saveJar` has work to do).
    var writesJar: Bool { cookies != nil }

    /// Writes the cookie jar, when one was asked for: before the end of the run is published, so
    /// whoever hears it (a CLI about to exit) finds the file written.
    func saveJar() throws(DownloadError) {
        do throws(DownloadError) {
            try cookies?.save()
        } catch {
            jarFailed = true
            throw error
        }
    }

    /// `saveJar` for the ways out that already carry an error.
    func jarProblem() -> DownloadError? {
        guard !jarFailed else { return nil }
        do throws(DownloadError) {
            try saveJar()
            return nil
        } catch {
            return error
        }
    }
}
