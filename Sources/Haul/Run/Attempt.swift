import Foundation
import HaulCore
import HaulEngine
import HaulStore

/// How one attempt (a request, its redirects, its response) ended.
enum AttemptOutcome {
    /// The body was written to its end.
    case bodyFinished
    /// The server proved the bytes on disk are the whole thing.
    case complete
    /// The response named a file that is this request's finished download (its mark proves it):
    /// the download ends as that file, already complete (`PartialDownload.takingNamedFinishedFile`).
    case finishedFileNamed
    /// The bytes on disk must be given up.
    case restart(RestartReason)
    /// A pause or cancel arrived.
    case stopped
    /// The speed limit changed four times or more over since the transfer started: ended, to go
    /// on at once by range reading in the new grain (`TransferPacing.readsOutOfStep`). No retry,
    /// no failure: the bytes written are all kept.
    case regrain
    /// The attempt failed; `retryable` when trying again could help, `retryAfter` when the server said when.
    case failed(DownloadError, retryable: Bool, retryAfter: Double?)
}

/// One attempt: sends the planned request, follows redirects, and writes the accepted body.
struct AttemptResult {
    let outcome: AttemptOutcome
    /// Whether any body byte reached the disk, so the retry budget can start afresh.
    let wroteBytes: Bool
    /// Whether other connections fetch the rest (the body finished at their part).
    var segmentsRunning = false
    /// Why the response made the attempt give up the bytes on disk itself, if it did.
    var restartedInPlace: RestartReason?

    /// How the attempt ended, for the download's state machine.
    var end: DownloadMachine.AttemptEnd {
        switch outcome {
        case .bodyFinished: return .bodyFinished(segmentsRunning: segmentsRunning)
        case .complete, .finishedFileNamed: return .complete
        case .restart(let reason): return .restart(reason)
        case .stopped: return .stopped
        case .regrain: return .regrained
        case .failed(let error, let retryable, let retryAfter):
            return .failed(
                DownloadMachine.Failure(retryable: retryable, retryAfter: retryAfter, httpStatus: error.httpStatus, message: error.message),
                wroteBytes: wroteBytes)
        }
    }

    /// The attempt's own error, when it failed.
    var error: DownloadError? {
        if case .failed(let error, _, _) = outcome { return error }
        return nil
    }

    /// Sends `first`, follows its redirects by `policy` on `transport`, and has the writer
    /// `writer` makes for the final hop judge and write the response.
    static func run(
        _ first: TransferRequest, policy: RedirectPolicy, transport: any HTTPTransport, options: TransferOptions, handlerMayBlock: Bool,
        writer: (TransferRequest) -> BodyWriter
    ) async -> AttemptResult {
        // The request that reaches the server is the final hop of the chain: every further
        // connection (segments) is derived from it, so it carries what the policy left of the
        // user's headers, method and body, never the originals.
        let followed = await RedirectFollower.follow(
            first, policy: policy, transport: transport, options: options, handlerMayBlock: handlerMayBlock, handler: writer)
        switch followed {
        case .answered(let outcome, let handler, _):
            await handler.settleRecordSave()
            return AttemptResult(
                outcome: handler.finalOutcome(outcome), wroteBytes: handler.bodyBytesWritten > 0, segmentsRunning: handler.segmentsRunning,
                restartedInPlace: handler.restartedInPlace)
        case .refused(let error):
            return AttemptResult(outcome: .failed(DownloadError(.protocolViolation, error.text), retryable: false, retryAfter: nil), wroteBytes: false)
        case .stopped:
            return AttemptResult(outcome: .stopped, wroteBytes: false)
        }
    }
}
