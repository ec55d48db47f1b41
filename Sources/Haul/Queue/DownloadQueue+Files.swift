import Foundation
import HaulCore
import HaulStore

/// One of a download's files, and what removing or moving the download did with it.
package struct TaskFile: Sendable, Equatable {
    package enum Role: String, Sendable {
        /// The partial file the body is written into.
        case partial
        /// A segmented download's progress map beside it.
        case segmentMap = "segment-map"
        /// A partial set aside as bad by its checksum.
        case rejected
        /// The finished file.
        case file
        /// The resume record (the queue keeps it in its store: its hash state, validators, identities).
        case record = "resume-record"
    }

    package let role: Role
    package let path: String
    /// Where it went (a move).
    package var movedTo: String?
    /// Why it was kept (a removal).
    package var keptBecause: String?
}

/// What `removeWithFiles` did: the files it deleted, and those it kept and why.
package struct FileRemoval: Sendable, Equatable {
    package var deleted: [TaskFile] = []
    package var kept: [TaskFile] = []
}

/// What `move` did.
package struct FileMove: Sendable, Equatable {
    /// The files renamed, each with where it went.
    package var moved: [TaskFile] = []
    /// The stored destination now.
    package var destination: String
    /// The final path now, when known.
    package var finalPath: String?
    /// A finished file's mark was set again at its new place (false for one never marked).
    package var finishedMarkKept = false
    /// It ran (or waited to) before the move, and was put back in the queue after.
    package var resumed = false
}

/// Removing a download together with its files (`haul serve`'s `haul.*` methods; moving is in
/// `DownloadQueue+Move.swift`), and what both share: each file touched only while this process
/// holds the destination's lock, and only when it is the download's own (`OwnedFileRule`).
extension DownloadQueue {
    /// How long a download running here is waited for to stop at its checkpoint.
    static let stopWait: Duration = .seconds(15)

    /// Removes download `id` from the queue with the files it wrote, and only those: its partial
    /// (its recorded device and inode), its segment map beside that partial, its resume record,
    /// and its finished file (its finished mark). Anything else under their names is kept and
    /// reported. A download running here is cancelled first; one whose destination another process
    /// holds is refused (`heldElsewhere`), and nothing changes. `inside`: whether a path is inside
    /// the directory files may be deleted from; a file outside is kept.
    /// `root`: each file is then deleted in its directory reached from `root` without following a
    /// symlink, and only while it is still the file judged the download's own (a parent swapped for
    /// a symlink after the judgement never leads the deletion out of it).
    package func removeWithFiles(_ id: Int64, within root: String? = nil, inside: (String) -> Bool) throws(DownloadError) -> FileRemoval {
        try fileOperations.inTurn(id) { () throws(DownloadError) -> FileRemoval in
            for _ in 0..<Self.placementAttempts {
                if let removal = try removeWithFilesOnce(id, within: root, inside: inside) { return removal }
            }
            throw Self.keptMoving(id)
        }
    }

    /// One attempt of `removeWithFiles`; nil when the download was moved (by a concurrent
    /// `move`) between reading where its files are and taking their lock: the files are then no
    /// longer where the lock and the checks would look, so it is tried again from its new place.
    private func removeWithFilesOnce(_ id: Int64, within root: String?, inside: (String) -> Bool) throws(DownloadError) -> FileRemoval? {
        // A move cut short leaves a second name of a file: one name each first, so the judgement
        // sees what the store names.
        let item = try settleLeftMove(try storedItem(id))
        let (request, layout) = try placement(of: item)
        let stopped = try stopForFiles(item, cancelling: true)
        let lock: DestinationLock
        do {
            lock = try lockDestination(layout, waiting: stopped.stoppedHere)
        } catch {
            if stopped.wasQueued { try? resume(id) }
            throw error
        }
        defer { lock.release() }
        let current = try storedItem(id)
        guard Self.samePlacement(current, item) else { return nil }
        guard current.state.isSettled || current.state == .queued else {
            throw DownloadError(.usage, "download \(id) is \(current.state.rawValue) in another process; stop it there first")
        }
        let slot = store.resumeRecord(id)
        let record = try? slot.load()
        let judged = Self.judgeFiles(current, request, layout, partialIdentity: record?.partialIdentity, inside: inside)
        var removal = judged.removal
        let doomed = judged.doomed
        for (file, found) in doomed {
            guard case .regular(let identity) = found else { continue }
            do throws(OutputError) {
                try TaskFiles.delete(file.path, ifStill: identity, within: root)
                removal.deleted.append(file)
            } catch {
                removal.kept.append(TaskFile(role: file.role, path: file.path, keptBecause: DownloadError(error).message))
            }
        }
        if record != nil { removal.deleted.append(TaskFile(role: .record, path: "(in the queue's store)")) }
        slot.remove()
        try storeCall { try $0.remove(id) }
        store.forgetRemovedSecrets()
        subscribers.forgetHub(id)
        return removal
    }

    /// What `removeWithFiles` would delete and keep, without deleting or stopping anything: the
    /// same judgement, for a confirmation that lists the files (`haul.removeWithFiles` with
    /// `{dryRun: true}`). The files may change before the removal itself, which judges again.
    package func filesRemovalWouldDelete(_ id: Int64, inside: (String) -> Bool) throws(DownloadError) -> FileRemoval {
        let item = try storedItem(id)
        let (request, layout) = try placement(of: item)
        let record = try? store.resumeRecord(id).load()
        let judged = Self.judgeFiles(item, request, layout, partialIdentity: record?.partialIdentity, inside: inside)
        var removal = judged.removal
        removal.deleted = judged.doomed.map(\.file)
        if record != nil { removal.deleted.append(TaskFile(role: .record, path: "(in the queue's store)")) }
        return removal
    }

    /// The one judgement of a removal: each file under the download's names that is its own and
    /// inside (to delete, with what was found there), and the others, kept with the reason.
    private static func judgeFiles(
        _ current: StoredDownload, _ request: DownloadRequest, _ layout: OutputLayout, partialIdentity: FileIdentity?, inside: (String) -> Bool
    ) -> (removal: FileRemoval, doomed: [(file: TaskFile, found: FoundFile)]) {
        var removal = FileRemoval()
        func judge(_ role: TaskFile.Role, _ path: String, _ verdict: OwnedFileRule.Verdict) -> Bool {
            switch verdict {
            case .absent: return false
            case .notOwned(let reason):
                removal.kept.append(TaskFile(role: role, path: path, keptBecause: reason))
                return false
            case .owned:
                guard inside(path) else {
                    removal.kept.append(TaskFile(role: role, path: path, keptBecause: "outside the download directory"))
                    return false
                }
                return true
            }
        }
        // Each file to delete with what was found at its name when it was judged.
        var doomed: [(file: TaskFile, found: FoundFile)] = []
        let foundPartial = FoundFile.at(layout.partialPath)
        let partial = OwnedFileRule.partial(recorded: partialIdentity, found: foundPartial)
        if judge(.partial, layout.partialPath, partial) { doomed.append((TaskFile(role: .partial, path: layout.partialPath), foundPartial)) }
        let foundMap = FoundFile.at(layout.segmentMapPath)
        let map = OwnedFileRule.companion(of: partial, found: foundMap)
        if judge(.segmentMap, layout.segmentMapPath, map) { doomed.append((TaskFile(role: .segmentMap, path: layout.segmentMapPath), foundMap)) }
        _ = judge(.rejected, layout.rejectedPath, OwnedFileRule.unidentified(found: .at(layout.rejectedPath)))
        if current.state == .completed, let final = current.finalPath ?? layout.finalPath {
            let output = request.outputRequest
            let found = FoundFile.at(final)
            let verdict = OwnedFileRule.finished(found: found, provable: output.provable, markProves: TaskFiles.markProves(final, of: output))
            if judge(.file, final, verdict) { doomed.append((TaskFile(role: .file, path: final), found)) }
        }
        return (removal, doomed)
    }

    func storedItem(_ id: Int64) throws(DownloadError) -> StoredDownload {
        guard let item = try storeCall({ try $0.item(id) }) else { throw DownloadError(.usage, "no download \(id) in the queue") }
        return item
    }

    func placement(of item: StoredDownload) throws(DownloadError) -> (DownloadRequest, OutputLayout) {
        guard item.placementIsReadable else { throw DownloadError(.io, "download \(item.id): its destination cannot be read from the store") }
        let request = try QueuedRequest.request(readableFieldsOf: item, QueueRunOptions())
        guard let layout = OutputLayout.of(request.destination, existingFile: request.existingFile, url: request.url) else {
            throw DownloadError(.usage, "download \(item.id) writes to standard output; it has no files")
        }
        return (request, layout)
    }

    /// What stopping a download for its files did.
    struct Stopped {
        /// It ran in this process and was stopped here (its lock is let go as it settles).
        var stoppedHere = false
        var wasRunning = false
        var wasQueued = false
    }

    /// Stops `item` so its files hold still: a waiting one is paused (no worker claims it
    /// meanwhile), one running here is cancelled or paused at its checkpoint and waited for. One
    /// in a transfer elsewhere is left alone (its lock refuses what follows).
    func stopForFiles(_ item: StoredDownload, cancelling: Bool) throws(DownloadError) -> Stopped {
        var stopped = Stopped()
        switch item.state {
        case .queued:
            // A worker of this process may claim it meanwhile: then the pause stops its run, waited for.
            try pause(item.id)
            stopped.wasQueued = true
            stopped.stoppedHere = control(item.id) != nil
        case .running, .pausing, .cancelling:
            guard control(item.id) != nil else { break }
            stopped.wasRunning = item.state == .running
            stopped.stoppedHere = true
            if cancelling { try cancel(item.id) } else if item.state == .running { try pause(item.id) }
        default:
            break
        }
        guard stopped.stoppedHere else { return stopped }
        let deadline = ContinuousClock.now + Self.stopWait
        while try !storedItem(item.id).state.isSettled {
            guard ContinuousClock.now < deadline else {
                throw DownloadError(.io, "download \(item.id) did not stop at a checkpoint within \(Self.stopWait.components.seconds) s; try again")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return stopped
    }

    /// The destination's lock; a run of this process that just stopped lets it go as it ends, so
    /// with `waiting` it is asked again for a few seconds.
    /// `pinned`: the layout's directory held open (see `TaskFiles.lock`).
    func lockDestination(_ layout: OutputLayout, waiting: Bool, in pinned: PinnedDirectory? = nil) throws(DownloadError) -> DestinationLock {
        let deadline = ContinuousClock.now + .seconds(5)
        while true {
            do {
                return try TaskFiles.lock(layout, in: pinned)
            } catch {
                guard waiting, error.kind == .heldElsewhere, ContinuousClock.now < deadline else { throw DownloadError(error) }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
    }
}
