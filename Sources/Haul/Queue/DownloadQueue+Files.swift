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

/// Removing a download together with its files, and moving a download (`haul serve`'s `haul.*`
/// methods): each file touched only while this process holds the destination's lock, and only
/// when it is the download's own (`OwnedFileRule`).
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
        for _ in 0..<Self.placementAttempts {
            if let removal = try removeWithFilesOnce(id, within: root, inside: inside) { return removal }
        }
        throw Self.keptMoving(id)
    }

    /// One attempt of `removeWithFiles`; nil when the download was moved (by a concurrent
    /// `move`) between reading where its files are and taking their lock: the files are then no
    /// longer where the lock and the checks would look, so it is tried again from its new place.
    private func removeWithFilesOnce(_ id: Int64, within root: String?, inside: (String) -> Bool) throws(DownloadError) -> FileRemoval? {
        let item = try storedItem(id)
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

    /// Moves download `id` to `destination` (a file path, or a directory for a download whose name
    /// comes from the server), paused, waiting, running or complete. A download running here is
    /// paused at its checkpoint, its partial and sidecars renamed beside the new name, its stored
    /// destination changed, and it goes back to the queue, to continue from its record (the
    /// partial keeps its device and inode, which the record names). A complete one's file is
    /// renamed and its finished mark set again. Renames only: a destination on another file
    /// system is refused, as is one that exists or that another process holds.
    /// `root`: the directory the move stays within; the new names are then made in directories
    /// reached from it without following a symlink (see `TaskFiles.pinnedDirectory`), so a parent
    /// swapped for a symlink after the caller checked the path never takes a file out of it.
    package func move(_ id: Int64, to destination: Destination, within root: String? = nil) throws(DownloadError) -> FileMove {
        for _ in 0..<Self.placementAttempts {
            if let move = try moveOnce(id, to: destination, within: root) { return move }
        }
        throw Self.keptMoving(id)
    }

    /// How often a removal or move starts again when a concurrent move changed the download's
    /// place under it.
    static let placementAttempts = 8

    static func keptMoving(_ id: Int64) -> DownloadError {
        DownloadError(.usage, "download \(id) kept being moved by other calls meanwhile; nothing was done, try again")
    }

    /// Whether `current` still has the place `before` had: the same destination and final path.
    /// What was read before the lock is only trusted while this holds.
    static func samePlacement(_ current: StoredDownload, _ before: StoredDownload) -> Bool {
        current.destinationKind == before.destinationKind && sameBytes(current.destination, before.destination)
            && sameBytes(current.finalPath, before.finalPath)
    }

    /// Paths compared as the file system compares names, byte for byte: Swift's `==` takes
    /// canonically equivalent strings as equal, and "é" (NFC) and "e" + U+0301 (NFD) are two
    /// different names on Linux.
    static func sameBytes(_ a: String?, _ b: String?) -> Bool {
        a.map { Array($0.utf8) } == b.map { Array($0.utf8) }
    }

    /// One attempt of `move`; nil when the download was moved by another call between reading
    /// where its files are and taking their lock (nothing was done by this one; it is stopped no
    /// more than it was, and is tried again from its new place).
    private func moveOnce(_ id: Int64, to destination: Destination, within root: String?) throws(DownloadError) -> FileMove? {
        let item = try storedItem(id)
        let (request, layout) = try placement(of: item)
        var moved = request
        moved.destination = destination
        guard let target = OutputLayout.of(destination, existingFile: moved.existingFile, url: moved.url) else {
            throw DownloadError(.usage, "a download cannot be moved to standard output")
        }
        let newFinal = Self.movedFinalPath(item.finalPath, layout: layout, to: target)
        if Self.sameBytes(target.partialPath, layout.partialPath), Self.sameBytes(newFinal, item.finalPath) {
            throw DownloadError(.usage, "download \(id) is there already")
        }
        let stopped = try stopForFiles(item, cancelling: false)
        var locks: [DestinationLock] = []
        defer { for lock in locks { lock.release() } }
        // Each file gets its new name first and loses its old one only once the store names the
        // new place: a crash in between leaves both names of the same file, never a record that
        // names a place with no file.
        var linked: [(from: String, to: String)] = []
        var remark: (path: String, identity: FileIdentity)?
        do throws(DownloadError) {
            locks.append(try lockDestination(layout, waiting: stopped.stoppedHere))
            let pinned: PinnedDirectory?
            do throws(OutputError) {
                if let root {
                    pinned = try TaskFiles.pinnedDirectory(target.directory, under: root)
                } else {
                    try TaskFiles.createDirectory(target.directory)
                    pinned = nil
                }
            } catch {
                throw DownloadError(error)
            }
            locks.append(try lockDestination(target, waiting: false))
            let current = try storedItem(id)
            // Moved meanwhile, or put back in the queue (here) by another call that ended first.
            let requeuedHere = !current.state.isSettled && (current.state == .queued || control(id) != nil)
            guard Self.samePlacement(current, item), !requeuedHere else {
                for lock in locks { lock.release() }
                if stopped.wasRunning || stopped.wasQueued { try? resume(id) }
                return nil
            }
            guard current.state.isSettled else {
                throw DownloadError(.usage, "download \(id) is \(current.state.rawValue) in another process; stop it there first")
            }
            if let other = try otherDownload(at: target, finalPath: newFinal, except: id) {
                // Its run would take this one's partial for stale bytes of its own and clear it, or
                // find its file in the way.
                throw DownloadError(
                    .destinationExists,
                    "download \(other.id) in the queue writes to \(other.finalPath ?? other.destination) already; a move never shares a destination; nothing was moved"
                )
            }
            var result = FileMove(destination: Self.path(of: destination), finalPath: newFinal)
            var moves: [TaskFile] = []
            if current.state == .completed {
                guard let from = current.finalPath, let to = newFinal, case .regular(let identity) = FoundFile.at(from) else {
                    throw DownloadError(.usage, "the finished file of download \(id) is not there any more; nothing to move")
                }
                let output = request.outputRequest
                let proven = TaskFiles.markProves(from, of: output)
                if case .notOwned(let reason) = OwnedFileRule.finished(found: .regular(identity), provable: output.provable, markProves: proven),
                    output.provable
                {
                    // Another file under its name is not this download's to move.
                    throw DownloadError(.destinationExists, "\(from) is \(reason); nothing was moved")
                }
                try linkNewName(from, to, expected: identity, in: pinned, &linked)
                moves.append(TaskFile(role: .file, path: from, movedTo: to))
                remark = proven ? (to, identity) : nil
            } else {
                if let final = target.finalPath, FoundFile.at(final) != .missing {
                    throw DownloadError(.destinationExists, "\(final) exists already; a move never replaces a file")
                }
                let record = try? store.resumeRecord(id).load()
                let partial = OwnedFileRule.partial(recorded: record?.partialIdentity, found: .at(layout.partialPath))
                if case .notOwned(let reason) = partial {
                    throw DownloadError(.destinationExists, "\(layout.partialPath) is not this download's partial (\(reason)); nothing was moved")
                }
                for (role, sidecar) in [(TaskFile.Role.partial, Sidecar.partial), (.segmentMap, .segmentMap), (.rejected, .rejected)] {
                    let from = layout.path(of: sidecar)
                    guard FoundFile.at(from) != .missing else { continue }
                    let to = target.path(of: sidecar)
                    try linkNewName(from, to, expected: role == .partial ? record?.partialIdentity : nil, in: pinned, &linked)
                    moves.append(TaskFile(role: role, path: from, movedTo: to))
                }
            }
            let kind: StoredDownload.DestinationKind = if case .directory = destination { .directory } else { .file }
            try storeCall { try $0.relocate(id, kind: kind, destination: Self.path(of: destination), finalPath: newFinal) }
            result.moved = moves
            for step in linked { TaskFiles.unlinkOldName(step.from, linkedAt: step.to) }
            if let remark {
                // Marked again after the old name went (each name's change touches the file's change time).
                result.finishedMarkKept = TaskFiles.markAgain(remark.path, in: pinned, of: moved.outputRequest, identity: remark.identity)
            }
            // Let the locks go first: the run that claims it at once takes the new one.
            for lock in locks { lock.release() }
            // The move is done once recorded: a resume refused now (a concurrent cancel or removal
            // took the download meanwhile) must not put the files back under a record that names
            // the new place.
            if stopped.wasRunning || stopped.wasQueued {
                result.resumed = (try? resume(id)) != nil
            }
            return result
        } catch {
            // Take back the new names given, newest first; the download stays where it was.
            for step in linked.reversed() { TaskFiles.unlinkOldName(step.to, linkedAt: step.from) }
            for lock in locks { lock.release() }
            if stopped.wasRunning || stopped.wasQueued { try? resume(id) }
            throw error
        }
    }

    /// Links `from` at `to`: in `pinned` (the directory `to` is in, held open) when the move is
    /// confined to a root, else by path.
    private func linkNewName(
        _ from: String, _ to: String, expected: FileIdentity?, in pinned: PinnedDirectory?, _ linked: inout [(from: String, to: String)]
    ) throws(DownloadError) {
        do throws(OutputError) {
            if let pinned {
                let bytes = Array(to.utf8)
                let directory = Array((pinned.path.hasSuffix("/") ? pinned.path : pinned.path + "/").utf8)
                guard bytes.starts(with: directory), !bytes[directory.count...].contains(UInt8(ascii: "/")) else {
                    throw OutputError(.io, "internal: \(to) is not in \(pinned.path)", path: to)
                }
                try TaskFiles.linkWithoutReplacing(from, into: pinned, as: String(decoding: bytes[directory.count...], as: UTF8.self), expected: expected)
            } else {
                try TaskFiles.linkWithoutReplacing(from, to: to)
            }
        } catch {
            throw DownloadError(error)
        }
        linked.append((from, to))
    }

    /// Another download in the queue whose files are (or will be) at `target`'s names: its partial,
    /// its final path given up front, or the file it finished. Names compared byte for byte, as
    /// the file system does.
    private func otherDownload(at target: OutputLayout, finalPath: String?, except id: Int64) throws(DownloadError) -> StoredDownload? {
        let wanted = Set([target.partialPath, target.finalPath, finalPath].compactMap { $0.map { Array($0.utf8) } })
        for other in try storeCall({ try $0.all() }) where other.id != id && other.placementIsReadable {
            guard let url = URL(string: other.url) else { continue }
            let destination: Destination = other.destinationKind == .file ? .file(other.destination) : .directory(other.destination)
            guard let layout = OutputLayout.of(destination, existingFile: other.existingPolicy, url: url) else { continue }
            let names = [layout.partialPath, layout.finalPath, other.finalPath].compactMap { $0.map { Array($0.utf8) } }
            if names.contains(where: wanted.contains) { return other }
        }
        return nil
    }

    /// Where a known final path goes when the download moves to `target`: the target's own final
    /// path, or (a download into a directory) the same name in the new directory.
    static func movedFinalPath(_ final: String?, layout: OutputLayout, to target: OutputLayout) -> String? {
        guard let final else { return nil }
        if let path = target.finalPath { return path }
        return target.path(forName: (final as NSString).lastPathComponent)
    }

    static func path(of destination: Destination) -> String {
        switch destination {
        case .file(let path), .directory(let path): return path
        case .standardOutput: return "-"
        }
    }

    private func storedItem(_ id: Int64) throws(DownloadError) -> StoredDownload {
        guard let item = try storeCall({ try $0.item(id) }) else { throw DownloadError(.usage, "no download \(id) in the queue") }
        return item
    }

    private func placement(of item: StoredDownload) throws(DownloadError) -> (DownloadRequest, OutputLayout) {
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
    private func stopForFiles(_ item: StoredDownload, cancelling: Bool) throws(DownloadError) -> Stopped {
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
    private func lockDestination(_ layout: OutputLayout, waiting: Bool) throws(DownloadError) -> DestinationLock {
        let deadline = ContinuousClock.now + .seconds(5)
        while true {
            do {
                return try TaskFiles.lock(layout)
            } catch {
                guard waiting, error.kind == .heldElsewhere, ContinuousClock.now < deadline else { throw DownloadError(error) }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
    }
}
