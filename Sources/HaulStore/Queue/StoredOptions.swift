import Foundation
import HaulCore
import HaulJSON
import Synchronization

/// A queued download's options as the store keeps them: its request's `DownloadOptions`, whole
/// (schema migration `v3-options`; rows from before it have none and take the run's settings).
public typealias StoredOptions = DownloadOptions

extension DownloadOptions {
    /// JSON for the `options` column, stored whole (sorted keys, as HaulJSON writes JSON).
    package func encoded() throws(StoreError) -> String {
        do {
            return try JSONWriter.text(encoding: self)
        } catch {
            throw StoreError(.io, "cannot encode a download's options: \(error)")
        }
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
