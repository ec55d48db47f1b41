import CHaulSystem
import Foundation
import HaulChecksum
import HaulCore
import HaulStore

/// Giving up the bytes on disk: truncating our own partial, or putting an adopted file back.
extension DownloadRunner {
    /// Truncates the output to 0 and forgets the old version. The record is reset only after the
    /// truncation, so it never vouches for bytes of another version.
    func discardBytes(_ output: PreparedOutput, reason: RestartReason) throws(DownloadError) {
        endSegments()
        retireSegments()
        record.segments = nil
        record.segmentPrefix = nil
        if record.isAdopted {
            try startBesideAdoptedFile(output)
        } else if output.sink.length > 0 {
            let truncated: Bool
            do {
                truncated = try output.sink.truncate(to: 0)
            } catch {
                throw DownloadError(.io, error)
            }
            guard truncated else {
                throw DownloadError(.cannotResume, "\(reason.message); the output cannot be rewound, so the download stops")
            }
        }
        record.originalURL = request.url.absoluteString
        record.validators = .none
        record.totalLength = nil
        record.finalLength = nil
        record.contentEncoding = nil
        record.resourceStart = 0
        record.syncedLength = 0
        record.isAdopted = false
        record.finishedLength = nil
        record.finishedIdentity = nil
        record.hashState = nil
        // A new version: the server's digest comes again with its response.
        record.serverDigest = nil
        serverDigest = nil
        hash = request.checksum.map { StreamingHash($0.algorithm) }
        hub.publish(.restarted(reason))
    }

    /// An adopted file (`--continue`) that cannot be continued goes back under its own name,
    /// untouched, and the download starts over in a new partial beside it; once complete it
    /// replaces the file.
    private func startBesideAdoptedFile(_ output: PreparedOutput) throws(DownloadError) {
        guard let layout = output.layout, let finalPath = layout.finalPath, case .partial(let file) = output.sink else {
            throw DownloadError(.cannotResume, "the existing file cannot be continued")
        }
        guard haul_rename_noreplace(layout.partialPath, finalPath) == 0 else {
            throw DownloadError(
                .cannotResume,
                "the existing file cannot be continued, and it cannot be put back at \(finalPath) (\(String(cString: strerror(errno)))); it is kept as \(layout.partialPath)"
            )
        }
        record.isAdopted = false
        record.keepsOwnMode = nil
        record.replacesExistingFile = true
        do {
            try file.startOverAsNewFile()
            record.partialIdentity = try file.identity()
            try saveRecord(layout, syncedLength: 0)
        } catch {
            throw DownloadError(.io, error)
        }
    }
}
