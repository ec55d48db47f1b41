import Foundation
import HaulCore
import HaulStore

/// The two ways a run ends without its file: a stop asked for through the API (pause, cancel),
/// and a failure. Both end the extra connections, keep (or delete) what is on disk with its
/// checkpoint, give up the destination and say how the run ended.
struct RunExit {
    let setup: RunSetup
    let credentials: RunCredentials
    let segments: SegmentDriver
    let output: PartialDownload?

    /// Pause or cancel, as requested: a pause checkpoints, saves the cookie jar, gives up the
    /// destination and reports the checkpoint's figures (`progress`, read after it); a cancel
    /// checkpoints or deletes, and is thrown as the run's end.
    func stop(_ stop: DownloadMachine.Stop, progress: () -> DownloadProgress, checkpoint: () throws(DownloadError) -> Void)
        throws(DownloadError) -> DownloadRunner.Ending
    {
        segments.stop()
        switch stop {
        case .cancelAndDelete:
            output?.deleteAll()
            throw DownloadError(.cancelled, "the download was cancelled and its partial data deleted")
        case .cancel:
            try checkpoint()
            throw DownloadError(.cancelled, "the download was cancelled; its partial data is kept")
        case .pause:
            try checkpoint()
            try credentials.saveJar()
            output?.release()
            setup.hub.publish(.paused(progress()))
            return .paused
        }
    }

    /// The way out of a failure (or a cancel): the bytes kept and checkpointed where they can be.
    func failed(_ failure: DownloadError, currentURL: URL, checkpoint: () -> StoreError?) -> DownloadRunner.Ending {
        var error = setup.redaction.redacted(failure, currentURL: currentURL)
        segments.stop()
        if error.category == .cancelled {
            output?.release()
            // A cancelled download has no outcome left to report a jar that cannot be written.
            _ = credentials.jarProblem()
            setup.hub.publish(.cancelled)
            return .cancelled
        }
        if let problem = credentials.jarProblem() { error = error.retold("\(error.text) (and \(problem.message))") }
        if let output, let failure = output.keepAfterFailure(checkpoint: checkpoint) {
            error = error.retold("\(error.text) (and the checkpoint on the way out failed: \(failure.message))")
        }
        output?.release()
        error.url = error.url ?? setup.request.url
        error.kept = output?.keptData().map { DownloadError.KeptData(path: $0.path, bytes: $0.bytes) }
        setup.hub.publish(.failed(error))
        return .failed(error)
    }
}
