import Foundation
import HaulCore
import HaulEngine
import HaulStore

/// Where a request lands, as the queue tells destinations apart, and what an item leaves behind
/// (its conversion to and from the store is `QueuedRequest`'s).
extension DownloadQueue {
    /// The key under which the queue tells destinations apart: one file, or one URL into one
    /// directory (paths made absolute as the queue stores them); "-" for standard output.
    package static func destinationKey(of request: DownloadRequest) -> String {
        switch request.destination {
        case .file(let file): return NewDownload.destinationKey(kind: .file, destination: absolute(file), url: request.url.absoluteString)
        case .directory(let directory):
            return NewDownload.destinationKey(kind: .directory, destination: absolute(directory), url: request.url.absoluteString)
        case .standardOutput: return "-"
        }
    }

    /// Deletes the partial file and record of `item`, and only its own: the partial is removed only
    /// while no run holds its destination and the item's record names that very file (its inode),
    /// so removing or cancelling one item never takes another item's data at the same path.
    /// Each check that cannot be made leaves the file where it is: deleting is never a guess.
    func deletePartial(of item: StoredDownload) {
        let slot = store.resumeRecord(item.id)
        defer { slot.remove() }
        // A damaged item whose URL and destination are sound (its options damaged, say) still
        // finds its partial; the record's inode check below is what vouches for the file.
        guard item.placementIsReadable, let request = try? QueuedRequest.request(readableFieldsOf: item, QueueRunOptions()),
            let layout = OutputLayout.of(request.destination, existingFile: request.existingFile, url: request.url),
            let record = try? slot.load(), let owned = record.partialIdentity
        else { return }
        PartialDownload.deleteOwnedPartial(layout, owned: owned)
    }
}
