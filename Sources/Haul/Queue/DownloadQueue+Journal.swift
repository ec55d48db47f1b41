import Foundation
import HaulStore

/// `haul serve`'s event journal, kept in the queue's store (both databases): the recent
/// notifications with increasing ids, a completion at most once per download.
extension DownloadQueue {
    /// Journals notification `method` of download `id`, keeping the last `keeping`; its id, or nil
    /// for a second completion of the download (which is not to be sent again).
    package func journal(_ method: String, of id: Int64, keeping: Int) throws(DownloadError) -> Int64? {
        try storeCall { try $0.appendEvent(item: id, method: method, keeping: keeping) }
    }

    /// The journal after id `after` (at most `limit` events) and its extent.
    package func journal(after: Int64, limit: Int) throws(DownloadError) -> JournalPage {
        try storeCall { try $0.events(after: after, limit: limit) }
    }

    /// Journals the completions a server that died before journaling them never sent.
    package func journalMissedCompletions(keeping: Int) throws(DownloadError) -> [JournalEvent] {
        try storeCall { try $0.journalMissedCompletions(keeping: keeping) }
    }
}
