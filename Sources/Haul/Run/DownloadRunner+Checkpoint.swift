import Foundation
import HaulCore
import HaulStore

/// The durable checkpoint (data synced, then the record that claims it), through the file keeper.
extension DownloadRunner {
    /// Makes the bytes so far durable and records them: data first, then the record that claims it.
    func checkpoint() throws(StoreError) {
        if let segments {
            try segments.checkpoint()
            pacer.checkpointed(at: elapsedSeconds())
            return
        }
        guard let output, output.layout != nil else { return }
        try output.checkpoint(hash: hash)
        pacer.checkpointed(at: elapsedSeconds())
    }

    /// What of the download is on disk after a failure, for the error.
    func keptData() -> DownloadError.KeptData? {
        output?.keptData().map { DownloadError.KeptData(path: $0.path, bytes: $0.bytes) }
    }

    /// Gives up the destination's lock and the claimed name. Safe to call again.
    func releaseDestination() {
        output?.release()
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
