import CHaulSystem
import Foundation
import HaulCore
import HaulStore

extension DownloadRunner {
    /// Syncs the file, marks the record finished, moves the file to its final name (never over a
    /// file that appeared meanwhile, unless asked to replace it), syncs the directory and forgets
    /// the record: the durability order every path goes through.
    func finish(_ output: PreparedOutput) throws(DownloadError) -> DownloadCompletion {
        // Before the file is put in place: a jar that cannot be written fails the download with
        // its bytes kept, and the next run finishes it.
        try saveCookieJar()
        let digest = try verifyDigest(output)
        let path: String
        if let layout = output.layout {
            guard let finalPath = layout.finalPath ?? record.fileName.map(layout.path(forName:)) else {
                throw DownloadError(.protocolViolation, "the download finished without a file name")
            }
            if !output.alreadyInPlace {
                do {
                    try output.sink.syncData()
                } catch {
                    throw DownloadError(.io, error)
                }
                try markFinished(output, layout: layout)
                try moveIntoPlace(output, layout: layout, finalPath: finalPath)
            }
            if let deferDirectorySync {
                deferDirectorySync(AbsolutePath.directory(of: finalPath))
            } else {
                FileIO.syncDirectory(containing: finalPath)
            }
            CrashPoint.reach(.afterDirectorySync)
            keeper?.remove()
            unlink(layout.segmentMapPath)
            releaseDestination(keepingName: true)
            path = finalPath
        } else {
            path = output.sink.path
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

    /// Tells the record, before the rename, that the file is complete and which file it is (size,
    /// inode, modification time, all kept by the rename): a run that dies between the rename and
    /// forgetting the record recognises its own finished file, and nothing else, as done.
    private func markFinished(_ output: PreparedOutput, layout: OutputLayout) throws(DownloadError) {
        guard case .partial(let file) = output.sink else { return }
        do {
            record.finishedLength = output.sink.length
            record.finishedIdentity = try file.identity()
            try saveRecord(layout, syncedLength: output.sink.length)
        } catch {
            throw DownloadError(.io, error)
        }
    }

    /// Renames the partial to `finalPath`. Without `--force` a file that appeared there during the
    /// download is never replaced: the data stays in the partial (with its record) and the run
    /// stops with `destinationExists`. With `--force` the replaced file's permission bits are kept.
    private func moveIntoPlace(_ output: PreparedOutput, layout: OutputLayout, finalPath: String) throws(DownloadError) {
        if case .partial(let file) = output.sink, record.keepsOwnMode != true {
            // The partial was private (0600) while incomplete; the file gets the usual mode.
            file.setPermissions(PartialFile.defaultFileMode)
        }
        if request.existingFile == .overwrite || record.replacesExistingFile == true {
            var existing = stat()
            if lstat(finalPath, &existing) == 0, existing.st_mode & S_IFMT == S_IFREG, case .partial(let file) = output.sink {
                file.setPermissions(existing.st_mode & 0o7777)
            }
            guard rename(layout.partialPath, finalPath) == 0 else {
                throw moveFailure(layout, finalPath, code: errno)
            }
        } else if haul_rename_noreplace(layout.partialPath, finalPath) != 0 {
            let code = errno
            // The file is not in place: the record must not say it is.
            record.finishedLength = nil
            record.finishedIdentity = nil
            do {
                try saveRecord(layout, syncedLength: output.sink.length)
            } catch {
                throw DownloadError(.io, error)
            }
            guard code == EEXIST else {
                throw moveFailure(layout, finalPath, code: code)
            }
            var error = DownloadError(
                .destinationExists,
                "\(finalPath) appeared while the download ran and was left alone; the complete download is kept in \(layout.partialPath) (run again with \(setting: .overwrite) to replace the file)"
            )
            error.path = finalPath
            error.systemError = code
            throw error
        }
        CrashPoint.reach(.afterRename)
    }

    private func moveFailure(_ layout: OutputLayout, _ finalPath: String, code: Int32) -> DownloadError {
        let reason = String(cString: strerror(code))
        var error = DownloadError(.io, "cannot move the finished download into place at \(finalPath): \(reason); the data is kept in \(layout.partialPath)")
        error.path = finalPath
        error.systemError = code
        return error
    }
}
