import Foundation
import HaulCore
import HaulStore

/// The durable checkpoint (data synced, then the record that claims it) and the destination lock.
extension DownloadRunner {
    /// Makes the bytes so far durable and records them: data first, then the record that claims it.
    func checkpoint() throws(StoreError) {
        if let segments {
            try segments.checkpoint()
            pacer.checkpointed(at: elapsedSeconds())
            return
        }
        guard let output, let layout = output.layout else { return }
        try output.sink.syncData()
        try saveRecord(layout, syncedLength: output.sink.length)
        pacer.checkpointed(at: elapsedSeconds())
    }

    /// What of the download is on disk after a failure, for the error: the partial, an adopted
    /// file back under its name, or a partial set aside as proven bad. Nil for a direct output
    /// (it is never resumed) and when nothing is left.
    func keptData() -> DownloadError.KeptData? {
        guard let output, let layout = output.layout else { return nil }
        if FileIO.exists(layout.partialPath) {
            let segmentBytes = record.segments.map { SegmentTable(segments: $0).bytesDone } ?? 0
            let bytes = output.sink.length + segmentBytes
            return bytes > 0 ? DownloadError.KeptData(path: layout.partialPath, bytes: bytes) : nil
        }
        let others = record.isAdopted ? [layout.finalPath].compactMap { $0 } : [layout.rejectedPath]
        for path in others {
            if let size = FileIO.regularFileSize(path), size > 0 { return DownloadError.KeptData(path: path, bytes: size) }
        }
        return nil
    }

    /// Saves the record through the keeper, claiming `syncedLength` bytes as durable: the caller
    /// has synced at least that much.
    func saveRecord(_ layout: OutputLayout, syncedLength: Int64) throws(StoreError) {
        guard let keeper else { return }
        try keeper.save(&record, syncedLength: syncedLength, hash: hash)
    }

    /// Gives up the destination's lock (removing the lock file) and the claimed name; `keepingName`
    /// when the file is complete and in place under it. Safe to call again.
    func releaseDestination(keepingName: Bool = false) {
        destinationLock?.release()
        destinationLock = nil
        // A name put in place stays known to this process: a later download of the same batch
        // that the server names alike gets a unique name instead of a refusal.
        if let claimedPath { ClaimedNames.shared.release(claimedPath, completed: keepingName) }
        claimedPath = nil
    }

    /// A checkpoint that must succeed (a pause, a retry): its failure ends the run.
    func checkpointOrFail() throws(DownloadError) {
        do {
            try checkpoint()
        } catch {
            throw DownloadError(.io, error)
        }
    }

    /// A checkpoint on the way out of a failure; its own failure is returned so the message can
    /// carry both, and the first error is never hidden.
    func checkpointOnExit() -> StoreError? {
        do {
            try checkpoint()
            return nil
        } catch {
            return error
        }
    }
}
