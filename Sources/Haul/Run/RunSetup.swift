import Foundation
import HaulCore
import HaulStore

/// What one run of a download is given and never changes: the request, the hub its events go to,
/// the control it obeys, where its record lives and how its directory is synced, and the ledger of
/// the mirrors it admits.
struct RunSetup {
    let request: DownloadRequest
    let hub: EventHub
    let control: RunControl
    /// Where the record of a layout lives.
    let records: @Sendable (OutputLayout) -> any ResumeRecordStore
    /// Where a queue run's finished files are put in place together (`FinishGroups`); nil: on
    /// their own, the directory synced before the completion is reported.
    let finishGroups: FinishGroups?
    /// The queue item this run downloads, for its finish group.
    let item: Int64?
    /// Called once the download no longer transfers and its file is to be put in place (a queue
    /// worker then takes its next item meanwhile).
    let transfersEnded: (@Sendable () -> Void)?
    /// The mirrors this run admitted, for the completion's account of their proof.
    let mirrors: MirrorLedger

    /// The redaction of every message that leaves the run.
    var redaction: RunRedaction { RunRedaction(request: request) }

    /// The one redirect policy of the run's requests.
    var redirects: RedirectPolicy {
        RedirectPolicy(maxRedirects: request.maxRedirects, allowsDowngrade: request.allowsHTTPRedirect)
    }

    /// The event that starts the run, once `output` is open.
    func started(_ output: PartialDownload) -> DownloadStarted {
        // The URL is not the file's identity (a fresh signed link, a mirror, another port): the
        // partial is continued if the server's answer proves it the same file, by its validators
        // and an overlap compared byte for byte; otherwise it restarts.
        let note = output.partialFromAnotherURL.map {
            "the partial download came from another URL (\(Redaction.url($0))); it is continued only if this server's file proves to be the same"
        }
        return DownloadStarted(
            url: request.url, destination: output.layout?.finalPath ?? (output.layout == nil ? output.sink.path : nil),
            // A finished file in place continues nothing: it is complete as it is.
            resumingFrom: output.alreadyInPlace ? 0 : output.bytesOnDisk, note: note)
    }
}
