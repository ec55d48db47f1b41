import Foundation
import HaulCore
import HaulStore

extension QueueItem {
    /// What a damaged item's message tells the user to do.
    static let damagedRowAdvice = "remove it and add it again"

    /// The item as shown; a damaged one (see `RowDamage`) as failed, with what is damaged: it will
    /// never run as it is.
    init(_ stored: StoredDownload) {
        let damage = stored.damage.map { "\($0.reason); \(Self.damagedRowAdvice)" }
        self.init(
            id: stored.id, url: URL(string: stored.url), urlString: Redaction.url(stored.url), destination: stored.destination,
            destinationIsDirectory: stored.destinationKind == .directory, finalPath: stored.finalPath,
            state: damage == nil ? stored.state : .failed, priority: stored.priority,
            bytes: stored.bytes,
            totalBytes: stored.totalBytes, bytesPerSecond: damage == nil && stored.state == .running ? stored.bytesPerSecond : 0,
            lastError: damage ?? stored.lastError, errorCategory: damage == nil ? stored.errorCategory : DownloadError.Category.io.name)
    }
}
