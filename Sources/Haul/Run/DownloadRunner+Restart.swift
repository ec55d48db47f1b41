import Foundation
import HaulChecksum
import HaulCore
import HaulStore

/// Giving up the bytes on disk for a new version, through the file keeper.
extension DownloadRunner {
    /// Ends the segments, has the file keeper give up the bytes (truncating the partial, or putting
    /// an adopted file back with a new partial beside it), and starts the digest over.
    func discardBytes(_ output: PartialDownload, reason: RestartReason) throws(DownloadError) {
        endSegments()
        retireSegments()
        do {
            try output.discard(because: reason.message, restartingFrom: request.url)
        } catch {
            throw DownloadError(error)
        }
        // A new version: the server's digest comes again with its response.
        serverDigest = nil
        hash = request.checksum.map { StreamingHash($0.algorithm) }
        hub.publish(.restarted(reason))
    }
}
