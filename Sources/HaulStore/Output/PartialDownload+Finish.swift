import CHaulSystem
import Foundation
import HaulChecksum
import HaulCore

/// The ends of the partial: finished in the durability order, given up for a new version, set
/// aside when proven bad, put back when adopted, deleted on request.
extension PartialDownload {
    /// Puts the complete file in place, in the durability order every download goes through (see
    /// `FinishGroup`, of which this is a group of one): the data synced, the record marked
    /// finished, the rename, the directory synced, the record forgotten. Returns the path.
    package func finish(replacing: Bool, hash: StreamingHash?) throws(OutputError) -> String {
        let results = FinishGroup.finish([FinishGroup.Member(self, replacing: replacing, hash: hash)])
        guard let result = results.first else { throw OutputError(.io, "internal: the download was not finished") }
        return try result.get()
    }

    /// Step 2 of finishing, once the data is synced: the record says the file is finished, with
    /// the identity the rename keeps (`identity`, read before the sync; nil: read now). Returns the
    /// save to make (stamped), nil when there is no record to keep (no keeper).
    func markFinished(hash: StreamingHash?, identity: FileIdentity? = nil) throws(StoreError) -> (keeper: RecordKeeper, record: ResumeRecord)? {
        if let failure = inFlight.settle() { throw failure }
        if let file = partialFile {
            record.finishedLength = sink.prefixLength
            if let identity {
                record.finishedIdentity = identity
            } else {
                record.finishedIdentity = try file.identity()
            }
        }
        guard let keeper else { return nil }
        RecordKeeper.stamp(&record, syncedLength: sink.prefixLength, hash: hash)
        return (keeper, record)
    }

    /// A file found complete in place by its record alone (a run killed after its rename, before
    /// its mark) is marked now as its rename would have marked it, if it is still exactly the file
    /// the record names: the record is forgotten once this run ends, and the mark is then the only
    /// proof the same request finds again. A file its mark proves already is left as it is. Only
    /// a file nothing was done to since this run took it (its change time then, `takenChangeTime`)
    /// is marked: one written into meanwhile with its size and modification time put back keeps
    /// the record's identity, and a mark would prove bytes Haul never wrote.
    func markFoundFinished() {
        guard alreadyInPlace, let key = requestKey, let identity = record.finishedIdentity, let file = partialFile,
            let taken = takenChangeTime, file.finishedRequest() != key
        else { return }
        file.markFinished(request: key, expecting: identity, changedAt: taken)
    }

    /// The finished mark could not be saved: the record must not say the file is in place.
    func unmarkFinished() {
        record.finishedLength = nil
        record.finishedIdentity = nil
    }

    /// Step 5: the file is in place and its directory synced; the record is forgotten, the
    /// segment map removed, the lock given up (the name kept). Returns the final path.
    func forgetFinished() -> String {
        keeper?.remove()
        if let layout { unlink(layout.segmentMapPath) }
        release(keepingName: true)
        return destinationPath
    }

    /// Step 3: renames the partial to its final path. Unless `replacing` (or the record says it
    /// replaces), a file that appeared there during the download is never replaced: the data stays
    /// in the partial (with its record, no longer marked finished) and `destinationExists` says so.
    /// Replacing keeps the replaced file's mode.
    /// `written`: the identity of the partial this run wrote, where read already (nil: read here).
    func moveIntoPlace(replacing: Bool, hash: StreamingHash?, written: FileIdentity? = nil) throws(OutputError) {
        guard let layout, let finalPath else { throw OutputError(.io, "the download finished without a file name") }
        let replacing = replacing || record.replacesExistingFile == true
        // Only the file this run wrote is given the final name: a partial another process put at
        // the path meanwhile (the lock should make that impossible) is never moved into place.
        if let file = partialFile, let written = written ?? (try? file.identity()), let current = FileIdentity.of(layout.partialPath) {
            guard written.isSameFile(as: current) else {
                throw OutputError(
                    .io, "\(layout.partialPath) is no longer the file this run wrote (another process replaced it); nothing was moved to \(finalPath)",
                    path: layout.partialPath)
            }
            // The same file, written into since its data was synced and its record saved (its
            // size or modification time moved): those bytes are not what this run fetched.
            guard written == current else {
                throw OutputError(
                    .io,
                    "\(layout.partialPath) changed after this run synced it (another process wrote into it); nothing was moved to \(finalPath), and the next run fetches it again",
                    path: layout.partialPath)
            }
        }
        if let file = partialFile, record.keepsOwnMode != true {
            // The partial was private (0600) while incomplete; the file gets the usual mode.
            file.setPermissions(PartialFile.defaultFileMode)
        }
        if replacing {
            var existing = stat()
            if lstat(finalPath, &existing) == 0, existing.st_mode & S_IFMT == S_IFREG, let file = partialFile {
                file.setPermissions(existing.st_mode & 0o7777)
            }
            guard rename(layout.partialPath, finalPath) == 0 else { throw moveFailure(layout, finalPath, code: errno) }
        } else if haul_rename_noreplace(layout.partialPath, finalPath) != 0 {
            let code = errno
            // The file is not in place: the record must not say it is.
            unmarkFinished()
            do {
                try saveRecord(syncedLength: sink.prefixLength, hash: hash)
            } catch {
                throw .io(error)
            }
            guard code == EEXIST else { throw moveFailure(layout, finalPath, code: code) }
            throw OutputError(
                .destinationExists,
                "\(finalPath) appeared while the download ran and was left alone; the complete download is kept in \(layout.partialPath) (run again with \(setting: .overwrite) to replace the file)",
                path: finalPath, systemError: code)
        }
        CrashPoint.reach(.afterRename)
    }

    private func moveFailure(_ layout: OutputLayout, _ finalPath: String, code: Int32) -> OutputError {
        let reason = String(cString: strerror(code))
        return OutputError(
            .io, "cannot move the finished download into place at \(finalPath): \(reason); the data is kept in \(layout.partialPath)", path: finalPath,
            systemError: code)
    }

    /// Gives up the bytes on disk for a new version (`because`: why, for a message): the partial is
    /// truncated to 0, or an adopted file goes back under its name with a new partial beside it.
    /// The record is reset only after the truncation, so it never vouches for another version.
    package func discard(because reason: String, restartingFrom url: URL) throws(OutputError) {
        // A checkpoint of the old version must land before its bytes go, never after.
        if let failure = inFlight.settle() { throw .io(failure) }
        record.segments = nil
        record.segmentPrefix = nil
        if record.isAdopted {
            try startBesideAdoptedFile()
        } else if sink.prefixLength > 0 {
            let truncated: Bool
            do {
                truncated = try sink.truncate(to: 0)
            } catch {
                throw .io(error)
            }
            guard truncated else { throw OutputError(.cannotResume, "\(reason); the output cannot be rewound, so the download stops") }
        }
        record.originalURL = url.absoluteString
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
    }

    /// An adopted file that cannot be continued goes back under its own name, untouched, and the
    /// download starts over in a new partial beside it; once complete it replaces the file.
    private func startBesideAdoptedFile() throws(OutputError) {
        guard let layout, let finalPath = layout.finalPath, let file = partialFile else {
            throw OutputError(.cannotResume, "the existing file cannot be continued")
        }
        guard haul_rename_noreplace(layout.partialPath, finalPath) == 0 else {
            let code = errno
            throw OutputError(
                .cannotResume,
                "the existing file cannot be continued, and it cannot be put back at \(finalPath) (\(String(cString: strerror(code)))); it is kept as \(layout.partialPath)",
                path: layout.partialPath, systemError: code)
        }
        record.isAdopted = false
        record.keepsOwnMode = nil
        record.replacesExistingFile = true
        do {
            try file.startOverAsNewFile()
            record.partialIdentity = try file.identity()
            try saveRecord(syncedLength: 0, hash: nil)
        } catch {
            throw .io(error)
        }
    }

    /// A partial proven bad is never trusted again: it is moved to `rejectedPath` (replacing an
    /// older one) and its record forgotten, so the next run starts afresh instead of checking the
    /// same bytes again. Nil when it cannot be moved (an adopted file goes back to its own name).
    package func setAside() -> String? {
        _ = inFlight.settle()
        guard let layout, !record.isAdopted, rename(layout.partialPath, layout.rejectedPath) == 0 else { return nil }
        unlink(layout.segmentMapPath)
        keeper?.discardStale()
        FileIO.syncDirectory(containing: layout.rejectedPath)
        return layout.rejectedPath
    }

    /// What is kept of a download that failed: an adopted file that could not be proven goes
    /// back to its name, untouched, with no record; an empty partial is removed with its record;
    /// a partial set aside as proven bad leaves nothing to keep; anything else is checkpointed by
    /// `checkpoint` (the download's, which knows its segments). Returns the checkpoint's failure.
    package func keepAfterFailure(checkpoint: () -> StoreError?) -> StoreError? {
        // Superseded by the checkpoint below, which tries again.
        _ = inFlight.settle()
        if record.isAdopted {
            if let layout, let finalPath = layout.finalPath, haul_rename_noreplace(layout.partialPath, finalPath) == 0 { keeper?.discardStale() }
            return nil
        }
        if let layout, sink.prefixLength == 0 {
            unlink(layout.partialPath)
            keeper?.discardStale()
            return nil
        }
        if let layout, !FileIO.exists(layout.partialPath) { return nil }
        return checkpoint()
    }

    /// Cancelled with its data deleted: the partial, the segment map and the record go.
    package func deleteAll() {
        _ = inFlight.settle()
        guard let layout else { return }
        unlink(layout.partialPath)
        unlink(layout.segmentMapPath)
        keeper?.discardStale()
    }

    /// Removes the partial a cancelled queue item left, if it is still the file its record names
    /// (`owned`) and no run holds its lock.
    package static func deleteOwnedPartial(_ layout: OutputLayout, owned: FileIdentity) {
        guard let lock = try? DestinationLock(path: layout.lockPath, key: layout.partialPath) else { return }
        defer { lock.release() }
        guard let current = FileIdentity.of(layout.partialPath), current.isSameFile(as: owned) else { return }
        unlink(layout.partialPath)
        unlink(layout.segmentMapPath)
    }
}
