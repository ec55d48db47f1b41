import Foundation
import HaulCore

/// What leaves a download as text (a failure, a retry's reason) is redacted for every credential
/// it knows: messages from elsewhere (libcurl's error text echoes a proxy URL it cannot read,
/// password and all) reach the user, `--json`, `queue list` and the store through here.
struct RunRedaction {
    let request: DownloadRequest

    /// The passwords and credential header values of this download: its URL's (as given and as
    /// refreshed: `currentURL`) and mirrors', the proxy setting's and the environment's proxies',
    /// and the values of its credential headers.
    func knownSecrets(currentURL: URL) -> [String] {
        var urls = [request.url.absoluteString, currentURL.absoluteString] + request.mirrors.map(\.absoluteString)
        if let proxy = request.transfer.proxy { urls.append(proxy) }
        let environment = ProcessInfo.processInfo.environment
        // The variables libcurl reads, and HTTP_PROXY too, although no engine reads it.
        for name in ProxyRoute.environmentNames + ["HTTP_PROXY"] {
            if let value = environment[name] { urls.append(value) }
        }
        var secrets = urls.flatMap(Redaction.secrets(inURL:))
        for field in request.headers where Redaction.secretHeaderNames.contains(field.name.lowercased()) {
            secrets += Redaction.secrets(inHeaderValue: field.value)
        }
        return secrets
    }

    /// `error` with every known secret shown as `***`.
    func redacted(_ error: DownloadError, currentURL: URL) -> DownloadError {
        let secrets = knownSecrets(currentURL: currentURL)
        guard !secrets.isEmpty else { return error }
        let text = error.text.mappingText { Redaction.text($0, hiding: secrets) }
        return text == error.text ? error : error.retold(text)
    }
}
