import Foundation
import HaulCore
import HaulJSON
import Synchronization

/// The settings of one queued download beyond its URL, method, headers, body, destination and
/// range: what shapes the request and the file, stored as given, so a download run later behaves
/// exactly as asked (schema migration `v3-options`; rows from before it have none and take the
/// run's settings). How a run behaves (retries, timeouts, concurrency, a shared speed limit) is
/// the run's to say, not stored.
public struct StoredOptions: Codable, Sendable, Equatable {
    /// `--checksum`; stored as its text (`ALGO=HEX`, or `ALGO` alone to compute only).
    public var checksum: Checksum?
    /// `--min-free-space` in bytes; nil keeps the default margin (16 MiB).
    public var minFreeSpace: Int64?
    /// `--max-size` in bytes; nil for no limit.
    public var maxSize: Int64?
    /// `false` with `--no-server-digest` (nil: verified, the default).
    public var serverDigest: Bool?
    /// `--s3-checksums`.
    public var s3Checksums: Bool?
    /// `--http2`.
    public var http2: Bool?
    /// Connections per file; nil adapts.
    public var connections: Int?
    /// This download's own speed limit (a run's shared limit, when set, applies instead).
    public var bytesPerSecond: Int64?
    /// Whether TLS is verified (`false` with `--insecure`); nil keeps the run's setting.
    public var verifyTLS: Bool?
    /// `--cacert`: an extra CA bundle to trust; nil for none.
    public var caFile: String?
    /// `--allow-http-redirect`; nil keeps the run's setting.
    public var allowsHTTPRedirect: Bool?
    /// `--max-redirects`; nil keeps the run's limit.
    public var maxRedirects: Int?
    /// `--proxy` ("" for none); nil leaves it to the environment of the process that runs the
    /// download. A password in it is a secret: removed with the item's other secrets.
    public var proxy: String?
    /// `--noproxy`.
    public var noProxy: String?
    /// The netrc file's path (never its contents: the credentials are read when a request is sent).
    public var netrcFile: String?
    /// The cookie file's path (`--cookies`); its cookies are read when the download runs.
    public var cookieFile: String?
    /// Where the cookies are written after the download (`--cookie-jar`).
    public var cookieJar: String?
    /// Other servers of the same file (`--mirror`), as given; nil for none. A password in one is
    /// a secret: removed with the item's other secrets.
    public var mirrors: [String]?
    /// The mirrors may serve without a digest of the whole file (`--mirror-unverified`); nil: no.
    public var mirrorsUnverified: Bool?

    /// No option stored: every setting is the default or the run's.
    package init() {}

    /// JSON for the `options` column, stored whole (sorted keys, as HaulJSON writes JSON).
    package func encoded() throws(StoreError) -> String {
        do {
            return try JSONWriter.text(encoding: self)
        } catch {
            throw StoreError(.io, "cannot encode a download's options: \(error)")
        }
    }

    /// These options with nothing secret left: the proxy's and the mirrors' passwords are removed
    /// (`user:password@` becomes `user@`). What a download that can no longer run keeps.
    package var withoutSecrets: StoredOptions {
        var options = self
        options.proxy = proxy.map(Redaction.withoutPassword)
        options.mirrors = mirrors?.map(Redaction.withoutPassword)
        return options
    }

    /// Reads the `options` column; a value that cannot be read is a damaged row, never defaults.
    package static func decode(_ text: String, id: Int64) throws(StoreError) -> StoredOptions {
        switch read(text) {
        case .success(let options):
            return options
        case .failure(let problem):
            throw StoreError(.corruptStore, "download \(id): its stored options are damaged: \(problem.detail); remove it and add it again")
        }
    }

    /// Why an `options` column could not be read: what the JSON decoder found, never the text
    /// itself (it may hold a proxy's password).
    struct Unreadable: Error {
        let detail: String
    }

    /// Reads the `options` column. The items of a batch share a few texts, and each item's is read
    /// at its claim and at its settlement: the last texts read are kept decoded (`recentlyRead`).
    static func read(_ text: String) -> Result<StoredOptions, Unreadable> {
        if let known = recentlyRead.withLock({ $0[text] }) { return .success(known) }
        do throws(DecodingError) {
            let options = try JSONValue.decode(StoredOptions.self, from: text)
            // Never a secret: options with a password in them are decoded each time, not kept.
            if options == options.withoutSecrets {
                recentlyRead.withLock { known in
                    if known.count >= Self.recentlyReadLimit { known.removeAll() }
                    known[text] = options
                }
            }
            return .success(options)
        } catch {
            return .failure(Unreadable(detail: Self.describe(error)))
        }
    }

    /// Texts decoded lately, with what they decode to; none holds a secret.
    private static let recentlyRead = Mutex<[String: StoredOptions]>([:])
    private static let recentlyReadLimit = 16

    /// Whether `text` is kept decoded (for tests).
    static func keepsDecoded(_ text: String) -> Bool {
        recentlyRead.withLock { $0[text] != nil }
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map(\.stringValue).filter { !$0.isEmpty }
            return keys.isEmpty ? "" : " (at \(keys.joined(separator: ".")))"
        }
        switch error {
        case .dataCorrupted(let context):
            // At a key: a value the JSON holds, but one that is not what Haul writes (a checksum).
            return (context.codingPath.isEmpty ? "it is not JSON" : "it has a value Haul cannot read") + path(context)
        case .keyNotFound(let key, let context): return "\(key.stringValue) is missing" + path(context)
        case .typeMismatch(_, let context), .valueNotFound(_, let context): return "it has a value of the wrong type" + path(context)
        @unknown default: return "it is not the JSON Haul writes"
        }
    }
}
