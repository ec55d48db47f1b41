import Foundation
import HaulCore

/// The run's credential files: the netrc file checked and the cookie file read before anything is
/// sent, the cookie jar written before the end of the run is published.
extension DownloadRunner {
    /// Checks the netrc file and reads the cookie file before anything is sent; with cookies, every
    /// request of the run (redirect hops, retries, segments) goes through the run's cookie session.
    func openCredentialFiles() throws(DownloadError) {
        if let netrcFile = request.transfer.netrcFile { try NetrcFile.check(netrcFile) }
        guard request.cookieFile != nil || request.cookieJar != nil else { return }
        let session = try CookieSession(file: request.cookieFile, jar: request.cookieJar)
        cookies = session
        transport = CookieTransport(base: transport, session: session)
    }

    /// Writes the cookie jar, when one was asked for: before the end of the run is published, so
    /// whoever hears it (a CLI about to exit) finds the file written.
    func saveCookieJar() throws(DownloadError) {
        do throws(DownloadError) {
            try cookies?.save()
        } catch {
            cookieJarFailed = true
            throw error
        }
    }

    /// `saveCookieJar` for the ways out that already carry an error.
    func cookieJarProblem() -> DownloadError? {
        guard !cookieJarFailed else { return nil }
        do throws(DownloadError) {
            try saveCookieJar()
            return nil
        } catch {
            return error
        }
    }
}
