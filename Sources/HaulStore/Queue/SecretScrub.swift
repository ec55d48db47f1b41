import Foundation
import HaulCore

/// What a download keeps once it settles for good (completed or cancelled): nothing that was
/// given only so that it could run. Every header the user gave goes (an `X-Api-Key` is as secret
/// as an `Authorization`, and no header is needed once nothing runs), and so do the body, the
/// password of its URL, those of its proxy and mirrors, and those of the URLs in its resume
/// record (which a cancelled item keeps: `rm` deletes its partial by the identity it names).
///
/// A failed download keeps all of it, since `queue resume` must be able to run it as asked.
/// Pure: the store writes what this says, in the transaction that settles the item.
struct SecretScrub: Equatable {
    /// The URL without its password; nil leaves the column as it is (a URL that could not be read
    /// back, out of which nothing can be taken).
    let url: String?
    /// The options without passwords; nil for none, and for options that could not be read
    /// (they may hold a password, and nothing reads them again).
    let options: StoredOptions?
    /// The resume record with passwordless URLs; nil for none, and for one that cannot be read
    /// (damaged, or of an unknown version: see `ResumeRecordCodec`).
    let record: ResumeRecord?
    /// Whether the row holds anything this takes out: only then does the store rewrite it and
    /// forget the earlier copies (see `QueueStore.forgetRemovedSecrets`).
    let removesSomething: Bool

    /// - Parameter droppingRecord: the settlement clears the record anyway (a completed download's
    ///   is forgotten in the commit that completes it), so it is not read: it counts as removing
    ///   something only if its text could hold a password (an '@').
    init(_ item: StoredDownload, droppingRecord: Bool = false) {
        let readableURL = !(item.damage?.covers("url") ?? false)
        url = readableURL ? Redaction.withoutPassword(item.url) : nil
        options = item.options?.withoutSecrets
        let recordChanges: Bool
        if droppingRecord {
            record = nil
            recordChanges = item.recordText.map { Self.holdsAt($0) } ?? false
        } else {
            // A record the codec cannot read (damaged, or of a version this Haul does not know) is
            // cleared with the rest rather than kept as it is: any password in it cannot be taken
            // out, and nothing can use it (every load goes through the same codec and fails, so
            // `rm` already cannot find the partial by it).
            let stored: ResumeRecord?
            do throws(StoreError) {
                stored = try QueueStore.decodeRecord(item.recordText, id: item.id)
            } catch {
                stored = nil
            }
            record = stored.map(Self.withoutPasswords)
            recordChanges = record != stored || (item.recordText != nil && stored == nil)
        }
        removesSomething =
            !item.headers.isEmpty || item.body != nil || (readableURL && url != item.url) || options != item.options || recordChanges
            || ["headers", "body", "options"].contains { item.damage?.covers($0) ?? false }
    }

    /// Whether `text` holds an '@', found by `memchr` in its bytes (a record is a kilobyte or two,
    /// which `utf8.contains` walks an index at a time).
    private static func holdsAt(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            guard let base = bytes.baseAddress else { return false }
            return memchr(base, Int32(UInt8(ascii: "@")), bytes.count) != nil
        }
    }

    private static func withoutPasswords(_ record: ResumeRecord) -> ResumeRecord {
        var record = record
        record.originalURL = Redaction.withoutPassword(record.originalURL)
        record.finalURL = Redaction.withoutPassword(record.finalURL)
        return record
    }
}
