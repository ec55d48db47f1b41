import Foundation
import HaulCore
import HaulStore

extension DownloadRunner {
    /// Verifies the digest, then has the file keeper put the file in place in the durability
    /// order (sync, mark finished, rename without replacing, sync the directory, forget the
    /// record), and reports the completion.
    func finish(_ output: PartialDownload) throws(DownloadError) -> DownloadCompletion {
        // Before the file is put in place: a jar that cannot be written fails the download with
        // its bytes kept, and the next run finishes it.
        try saveCookieJar()
        let digest = try verifyDigest(output)
        let path: String
        do {
            path = try output.finish(replacing: request.existingFile == .overwrite, hash: hash, deferDirectorySync: deferDirectorySync)
        } catch {
            throw DownloadError(error)
        }
        // The last report's speed covers every byte up to the end.
        meter.record(bytes: totalTransferred, at: elapsedSeconds())
        hub.publish(.progress(currentProgress(output)))
        let completion = DownloadCompletion(
            path: path,
            bytes: output.sink.length,
            bytesTransferred: totalTransferred,
            seconds: elapsedSeconds(),
            resumedFrom: resumedFrom,
            finalURL: finalURL,
            digest: digest,
            mirrorProof: mirrorLedger.proof(digest: digest, verified: expectedDigest?.expectedHex != nil))
        hub.publish(.completed(completion))
        return completion
    }
}
