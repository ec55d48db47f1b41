import Foundation
import HaulCore
import HaulStore

// Moving a download (`haul.move`): its files renamed within the root, its stored place changed.
extension DownloadQueue {
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
        try fileOperations.inTurn(id) { () throws(DownloadError) -> FileMove in
            for _ in 0..<Self.placementAttempts {
                if let move = try moveOnce(id, to: destination, within: root) { return move }
            }
            throw Self.keptMoving(id)
        }
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
        let item = try settleLeftMove(try storedItem(id))
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
        moves.begin(id)
        defer {
            for lock in locks { lock.release() }
            moves.end(id)
        }
        // Each file gets its new name first and loses its old one only once the store names the
        // new place: a crash in between leaves both names of the same file, never a record that
        // names a place with no file. The names are recorded first (`MoveIntent`), so whoever
        // opens the download after such a crash removes the name the store does not name.
        var recorded: MoveIntent?
        do throws(DownloadError) {
            let oldPinned = try Self.pinnedIfInside(layout.directory, root)
            locks.append(try lockDestination(layout, waiting: stopped.stoppedHere, in: oldPinned))
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
            locks.append(try lockDestination(target, waiting: false, in: pinned))
            let current = try storedItem(id)
            // Moved meanwhile, or put back in the queue (here) by another call that ended first, or
            // a run of this process stopped by another call, whose settlement its worker has not
            // written yet (no control left, the store still says pausing).
            let requeuedHere = !current.state.isSettled && (current.state == .queued || control(id) != nil || current.leaseOwner == owner)
            guard Self.samePlacement(current, item), !requeuedHere else {
                for lock in locks { lock.release() }
                if stopped.wasRunning || stopped.wasQueued { resumeOnceSettled(id) } else { waitWhileStoppingHere(id) }
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
            // Each file to link: its old and new name, and the identity it must have.
            var steps: [(move: TaskFile, expected: FileIdentity?, marked: FileIdentity?)] = []
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
                steps.append((TaskFile(role: .file, path: from, movedTo: to), identity, proven ? identity : nil))
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
                    steps.append((TaskFile(role: role, path: from, movedTo: to), role == .partial ? record?.partialIdentity : nil, nil))
                }
            }
            let intent = MoveIntent(
                names: steps.map { MoveIntent.Name(old: $0.move.path, new: $0.move.movedTo ?? $0.move.path, marked: $0.marked) },
                locks: [layout, target].map { MoveIntent.Lock(path: $0.lockPath, key: $0.partialPath) },
                resumes: stopped.wasRunning || stopped.wasQueued)
            try storeCall { try $0.recordMoveIntent(id, intent) }
            recorded = intent
            for step in steps {
                try linkNewName(step.move.path, step.move.movedTo ?? step.move.path, expected: step.expected, in: pinned)
                CrashPoint.reach(.afterMoveLink)
                moves.append(step.move)
            }
            let kind: StoredDownload.DestinationKind = if case .directory = destination { .directory } else { .file }
            var relocated = intent
            relocated.relocated = true
            try storeCall { try $0.relocate(id, kind: kind, destination: Self.path(of: destination), finalPath: newFinal, leaving: relocated) }
            CrashPoint.reach(.afterMoveRelocate)
            recorded = nil
            result.moved = moves
            // The old names go, and a finished file is marked again after (each name's change
            // touches the file's change time, which its mark bounds); then the intent is done.
            TaskFiles.finish(relocated, of: moved.outputRequest, in: pinned, removingIn: oldPinned)
            if let marked = steps.first(where: { $0.marked != nil }), let to = marked.move.movedTo {
                result.finishedMarkKept = TaskFiles.markProves(to, of: moved.outputRequest)
            }
            // Left behind if it cannot be cleared now: the next to open the download finds nothing to do.
            _ = try? storeCall { try $0.clearMoveIntent(id, ifStill: relocated) }
            // Let the locks go first: the run that claims it at once takes the new one.
            for lock in locks { lock.release() }
            // The move is done once recorded: a resume refused now (a concurrent cancel or removal
            // took the download meanwhile) must not put the files back under a record that names
            // the new place.
            if stopped.wasRunning || stopped.wasQueued {
                result.resumed = resumeOnceSettled(id)
            }
            return result
        } catch {
            // Take back the new names given: the download stays where it was. What the store says
            // decides (a relocation whose reply was lost may have committed); unread, the intent is
            // left for whoever opens the download next.
            if recorded != nil, let now = try? storedItem(id), let left = now.moveIntent, left.names == recorded?.names,
                let (request, _) = try? placement(of: now)
            {
                TaskFiles.finish(left, of: request.outputRequest)
                _ = try? storeCall { try $0.clearMoveIntent(id, ifStill: left) }
            }
            for lock in locks { lock.release() }
            if stopped.wasRunning || stopped.wasQueued { resumeOnceSettled(id) }
            throw error
        }
    }

    /// `directory` held open when it is inside `root` (reached from it without following a
    /// symlink: its lock file is opened in it), nil without a root or outside it.
    private static func pinnedIfInside(_ directory: String, _ root: String?) throws(DownloadError) -> PinnedDirectory? {
        guard let root, TaskFiles.isWithin(directory, root: root) else { return nil }
        do throws(OutputError) {
            return try TaskFiles.pinnedDirectory(directory, under: root, creating: false)
        } catch {
            throw DownloadError(error)
        }
    }

    /// Puts download `id` back in the queue once a transfer of it that this process is stopping
    /// has settled, 15 s at most: a run that ended hands its settlement to its worker's next claim,
    /// and a resume asked before (the store still says pausing) is refused, and was lost. Whether
    /// it was resumed.
    @discardableResult
    func resumeOnceSettled(_ id: Int64) -> Bool {
        waitWhileStoppingHere(id)
        return (try? resume(id)) != nil
    }

    /// Waits while a transfer of download `id` that this process runs is stopping (15 s at most).
    func waitWhileStoppingHere(_ id: Int64) {
        let deadline = ContinuousClock.now + Self.stopWait
        while let item = try? storedItem(id), item.state == .pausing || item.state == .cancelling, item.leaseOwner == owner,
            ContinuousClock.now < deadline
        {
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// Links `from` at `to`: in `pinned` (the directory `to` is in, held open) when the move is
    /// confined to a root, else by path.
    private func linkNewName(
        _ from: String, _ to: String, expected: FileIdentity?, in pinned: PinnedDirectory?
    ) throws(DownloadError) {
        do throws(OutputError) {
            if let pinned {
                guard let name = pinned.entry(to) else { throw OutputError(.io, "internal: \(to) is not in \(pinned.path)", path: to) }
                try TaskFiles.linkWithoutReplacing(from, into: pinned, as: name, expected: expected)
            } else {
                try TaskFiles.linkWithoutReplacing(from, to: to)
            }
        } catch {
            throw DownloadError(error)
        }
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
        return target.path(forName: AbsolutePath.name(of: final))
    }

    static func path(of destination: Destination) -> String {
        switch destination {
        case .file(let path), .directory(let path): return path
        case .standardOutput: return "-"
        }
    }
}
