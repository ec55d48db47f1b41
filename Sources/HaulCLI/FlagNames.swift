import Haul
import HaulCore

extension SettingNames {
    /// The `haul` command's flags for the settings the library's messages name.
    static let flags = SettingNames([
        .overwrite: "--force", .continueExisting: "-c", .curlEngine: "--engine curl", .maxSize: "--max-size",
        .minFreeSpace: "--min-free-space", .allowsHTTPRedirect: "--allow-http-redirect", .proxy: "--proxy", .noProxy: "--noproxy",
        .caFile: "--cacert", .insecureTLS: "--insecure", .rateLimit: "--limit-rate", .http2: "--http2", .directoryDestination: "-d",
    ])
}

extension DownloadError {
    /// The message as the command shows it: settings named by their flags.
    var shown: String { message(naming: .flags) }
}
