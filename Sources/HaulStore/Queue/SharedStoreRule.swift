import Foundation
import HaulCore

/// What a shared store (PostgreSQL) refuses to keep: every value the SQLite store scrubs when a
/// download settles (`SecretScrub`): headers, a body, and the passwords of its URL, proxy and
/// mirrors.
///
/// The SQLite store keeps its promise (a settled download keeps no secret) by overwriting freed
/// pages and truncating its write-ahead log. PostgreSQL cannot: an UPDATE leaves the old row
/// version in the table until VACUUM reuses it, and its WAL, its archives, its replicas and its
/// backups keep a copy for as long as they live, out of Haul's reach. So a shared store never
/// receives a secret: credentials stay on the workers, by reference — a netrc file
/// (`--netrc-file`), a cookie file (`--cookies`), a proxy from the worker's environment — and are
/// read when a request is sent. Pure: no I/O.
package enum SharedStoreRule {
    /// Why options given to item `id` later (`updateOptions`) cannot go into a shared store, nil
    /// when they can.
    package static func refusal(of options: StoredOptions, for id: Int64) -> String? {
        guard let secret = secrets(in: options) else { return nil }
        return "the options of download \(id) carry \(secret), which a shared queue database would keep in old row versions and its "
            + "write-ahead log; give a proxy by reference on the workers instead (in their environment)"
    }

    private static func secrets(in options: StoredOptions) -> String? {
        options.withoutSecrets != options ? "a password in its proxy or mirror URLs" : nil
    }

    /// Why `new` cannot go into a shared store, nil when it can.
    package static func refusal(of new: NewDownload) -> String? {
        var found: [String] = []
        if !new.headers.isEmpty {
            found.append("request headers (\(new.headers.map(\.name).joined(separator: ", ")))")
        }
        if new.body != nil { found.append("a request body") }
        if Redaction.withoutPassword(new.url) != new.url { found.append("a password in its URL") }
        if let options = new.options, let secret = secrets(in: options) { found.append(secret) }
        guard !found.isEmpty else { return nil }
        return "\(Redaction.url(new.url)) carries \(found.joined(separator: " and ")), which a shared queue database would keep "
            + "in old row versions and its write-ahead log after the download ends; give credentials by reference on the "
            + "workers instead (--netrc-file, --cookies, a proxy in the environment)"
    }
}
