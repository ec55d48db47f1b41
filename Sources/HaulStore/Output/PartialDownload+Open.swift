import CHaulSystem
import Foundation
import HaulCore

/// Opening: the output, the lock, and what an earlier run left (`OpenDecision` decides what to do
/// with it). Decides nothing about the network.
extension PartialDownload {
    /// What to open.
    package struct Request: Sendable {
        /// Where the bytes end up.
        package var destination: Destination
        /// What to do about a file at the destination.
        package var existingFile: ExistingFilePolicy
        /// The download's URL (a directory download's partial is keyed by it).
        package var url: URL
        /// The record a fresh download starts with (its URL, method and range).
        package var fresh: ResumeRecord
        /// Whether its URL, method and range alone name what it fetches, so that its finished
        /// file may carry a `FinishedMark` and be recognised by it: false for a request with a
        /// body, headers of its own or credentials (another body or another user may be another
        /// file under the same URL).
        package var provable: Bool

        /// Opening `destination` for `url` with `existingFile`, starting from `fresh`.
        package init(destination: Destination, existingFile: ExistingFilePolicy, url: URL, fresh: ResumeRecord, provable: Bool = true) {
            self.destination = destination
            self.existingFile = existingFile
            self.url = url
            self.fresh = fresh
            self.provable = provable
        }
    }

    /// Opens the output of `request`: a direct output, or the partial file with its lock and its
    /// record from `records`.
    package static func open(_ request: Request, records: (OutputLayout) -> any ResumeRecordStore) throws(OutputError) -> PartialDownload {
        LoopThread.mustNotBlock("opening the output of \(request.destination)")
        switch request.destination {
        case .standardOutput:
            return PartialDownload(layout: nil, sink: .direct(DirectOutput()), record: request.fresh)
        case .file(let path):
            switch PathKind.of(path) {
            case .device:
                do {
                    return PartialDownload(layout: nil, sink: .direct(try DirectOutput(existing: path)), record: request.fresh)
                } catch {
                    throw .io(error, path: path)
                }
            case .directory:
                throw OutputError(.usage, "\(path) is a directory; use \(setting: .directoryDestination) to download into it", path: path)
            case .symlink:
                throw .symlink(path)
            case .missing, .regular:
                break
            }
        case .directory:
            break
        }
        guard let layout = OutputLayout.of(request.destination, existingFile: request.existingFile, url: request.url) else {
            return PartialDownload(layout: nil, sink: .direct(DirectOutput()), record: request.fresh)
        }
        if let name = layout.finalNameTooLong {
            // Refused before anything is created or asked: the download could never be put in place.
            throw OutputError(
                .usage,
                "\(layout.finalPath ?? name) cannot be created: its name is \(name.utf8.count) bytes long and the file system takes at most \(layout.nameMax) bytes in a name; choose a shorter name",
                path: layout.finalPath)
        }
        try createDirectory(layout.directory)
        let lock: DestinationLock
        do {
            lock = try DestinationLock(path: layout.lockPath, key: layout.partialPath)
        } catch {
            throw OutputError.store(error, path: layout.finalPath)
        }
        do {
            let output = try openFile(layout, request, keeper: RecordKeeper(store: records(layout)), lock: lock)
            output.requestKey = request.provable ? FinishedMark.requestKey(of: request.fresh) : nil
            return output
        } catch {
            lock.release()
            throw error
        }
    }

    private static func openFile(_ layout: OutputLayout, _ request: Request, keeper: RecordKeeper, lock: DestinationLock) throws(OutputError)
        -> PartialDownload
    {
        var loaded: ResumeRecord?
        do {
            loaded = try keeper.load()
        } catch  where error.kind == .corruptRecord {
            // Without a record the partial's bytes are not trusted (see `.startFresh`).
            loaded = nil
        } catch {
            throw .io(error)
        }
        let fresh = request.fresh
        // Without a record nothing is decided by whether a partial is there (its bytes are not
        // trusted either way): a fresh download does not look it up, it creates its partial
        // exclusively and clears one in the way only if that fails (`createPartial`).
        let partialExists = loaded == nil ? false : PathKind.of(layout.partialPath) != .missing
        let finalPath = layout.finalPath(named: loaded?.fileName)
        let finishedInPlace =
            loaded.map { isInPlace($0, finalPath: finalPath, partialExists: partialExists, policy: request.existingFile) } ?? false
        let summary = loaded.map {
            OpenDecision.Loaded(
                matchesRequest: $0.method == fresh.method && $0.range == fresh.range, isAdopted: $0.isAdopted,
                isFinished: $0.finishedLength != nil, replacesExistingFile: $0.replacesExistingFile == true,
                partialIsFinishedFile: partialExists && isFinishedFile($0, at: layout.partialPath))
        }
        let final = layout.finalPath.map(PathKind.of)
        // Where an earlier run of this request put its finished file: the final path, or in a
        // directory download the name its URL gives (a name from the server is known only from a
        // response, and is checked then: `name(contentDisposition:url:overwrite:)`).
        let markedPath = layout.finalPath ?? layout.finalPathFromURL
        let marked = layout.finalPath == nil ? markedPath.map(PathKind.of) : final
        // Looked up only where it can decide: a file in the way that a new download would not replace.
        let proven =
            marked == .regular && request.existingFile != .overwrite && request.provable
            ? markedPath.flatMap { FinishedMark.provenFinished(at: $0, request: FinishedMark.requestKey(of: fresh)) } : nil
        let (decision, forgets) = OpenDecision.decide(
            loaded: summary, partialExists: partialExists, finishedFileInPlace: finishedInPlace, final: final, policy: request.existingFile,
            finalIsProvenFinished: proven != nil)
        if forgets { keeper.discardStale() }
        switch decision {
        case .refuse(.exists) where request.provable && markedPath.flatMap(FinishedMark.markedRequest(at:)) == FinishedMark.requestKey(of: fresh):
            // This request's own finished file, changed since Haul marked it: said so, for a user who
            // downloaded it and is told it is in the way.
            throw OutputError.changedSinceFinished(markedPath ?? layout.partialPath)
        case .refuse(let refusal):
            throw refusalError(refusal, layout)
        case .useFinishedFile:
            guard var finished = finishedInPlace ? loaded : fresh, let finalPath = finishedInPlace ? finalPath : markedPath else {
                throw OutputError(.io, "the finished download has no file name")
            }
            if !finishedInPlace, let proven {
                // Proven by its mark: this run's record says what the file is (and, in a
                // directory, its name), and is never saved.
                finished.finishedLength = proven.size
                finished.finishedIdentity = proven
                if layout.finalPath == nil { finished.fileName = layout.urlName }
            }
            let file: PartialFile
            do {
                // Opened only to be measured; nothing is written.
                file = try PartialFile(path: finalPath)
            } catch {
                // A proven file that cannot be opened as Haul opens its own (hard links, no write
                // permission) is in the way as any other file.
                throw finishedInPlace ? .io(error) : refusalError(.exists, layout)
            }
            // The file proven is the file opened, not one put there in between.
            if let proven, !finishedInPlace, try identity(of: file) != proven { throw refusalError(.exists, layout) }
            return PartialDownload(layout: layout, sink: .partial(file), record: finished, keeper: keeper, lock: lock, alreadyInPlace: true)
        case .adoptExistingFile:
            try clearPartialPath(layout, request)
            return try adopt(layout, fresh, keeper: keeper, lock: lock)
        case .startFresh:
            // Bytes without a record (lost, damaged, another request's, or a small download that
            // never wrote one) are not trusted: the path is cleared and the partial created anew,
            // so nothing that was there (a hard link, a planted file) is ever written through.
            let file = try createPartial(layout, request, clearing: loaded == nil ? nil : partialExists)
            var record = fresh
            record.partialIdentity = file.openedIdentity
            return PartialDownload(layout: layout, sink: .partial(file), record: record, keeper: keeper, lock: lock)
        case .continuePartial:
            guard let loaded else { throw OutputError(.io, "no record to continue from") }
            return try continuePartial(layout, loaded, fresh: fresh, keeper: keeper, lock: lock)
        }
    }

    /// A response named a file its mark proves this request's finished download
    /// (`Naming.finishedInPlace`): the partial this run created (nothing was written to it) and
    /// any record of it go, and the returned keeper holds that file, already in place, with this
    /// one's lock and claimed name. Refused as a file in the way when the file at the name is no
    /// longer the one proven, or cannot be opened as Haul opens its own.
    package func takingNamedFinishedFile() throws(OutputError) -> PartialDownload {
        guard let layout, let proven = namedFinishedFile, let finalPath, sink.prefixLength == 0 else {
            throw OutputError(.io, "internal: no finished file was named")
        }
        if let failure = inFlight.settle() { throw .io(failure) }
        let file: PartialFile
        do {
            // Opened only to be measured; nothing is written.
            file = try PartialFile(path: finalPath)
        } catch {
            throw .alreadyExists(finalPath)
        }
        guard try Self.identity(of: file) == proven else { throw .alreadyExists(finalPath) }
        // Only the partial this run created is removed, never one put at its path meanwhile.
        if let created = partialFile.flatMap({ try? $0.identity() }), let current = FileIdentity.of(layout.partialPath),
            created.isSameFile(as: current)
        {
            unlink(layout.partialPath)
        }
        unlink(layout.segmentMapPath)
        keeper?.discardStale()
        var finished = record
        finished.finishedLength = proven.size
        finished.finishedIdentity = proven
        let taken = PartialDownload(layout: layout, sink: .partial(file), record: finished, keeper: keeper, lock: lock, alreadyInPlace: true)
        taken.requestKey = requestKey
        taken.claimedPath = claimedPath
        lock = nil
        claimedPath = nil
        namedFinishedFile = nil
        return taken
    }

    /// The partial a record describes, cut back to what the record vouches for.
    private static func continuePartial(_ layout: OutputLayout, _ loaded: ResumeRecord, fresh: ResumeRecord, keeper: RecordKeeper, lock: DestinationLock)
        throws(OutputError) -> PartialDownload
    {
        let file = try openPartial(layout, createNew: false)
        var record = loaded
        record.partialIdentity = file.openedIdentity
        // A finished mark whose rename never happened: the file is continued (see `OpenDecision`),
        // and is finished again once the server's answer confirms it.
        record.finishedLength = nil
        record.finishedIdentity = nil
        // The URL is not the file's identity (a fresh signed link, a mirror, another port): the
        // partial is continued if the server's answer proves it the same file.
        let another = loaded.originalURL != fresh.originalURL ? loaded.originalURL : nil
        if loaded.segments == nil {
            // A map left by an earlier segmented attempt describes nothing any more.
            unlink(layout.segmentMapPath)
        }
        let sameBoot = loaded.bootID != nil && loaded.bootID == BootID.current
        let mapped = loaded.segments != nil && sameBoot ? SegmentProgressMap.read(path: layout.segmentMapPath) : nil
        // Just opened, the whole file counts as its sequential prefix (see `PartialFile.prefixLength`).
        let fileLength = file.prefixLength
        switch PartialTrust.of(loaded, fileLength: fileLength, mapped: mapped, currentBoot: BootID.current) {
        case .segments(let prefix, let segments):
            // A segmented partial has holes: its record says what is there, not its length.
            file.setPrefixLength(min(prefix, fileLength))
            record.segments = segments
            record.segmentPrefix = prefix
            record.volatileSegments = nil
            record.volatileSegmentPrefix = nil
        case .prefix(let trusted) where trusted < fileLength:
            do {
                try file.truncate(to: trusted)
            } catch {
                throw .io(error)
            }
        case .prefix:
            break
        }
        return PartialDownload(layout: layout, sink: .partial(file), record: record, keeper: keeper, lock: lock, partialFromAnotherURL: another)
    }

    /// Whether the finished file an earlier run put in place is still exactly that file (same
    /// inode, size and modification time) and no new download is wanted.
    /// A file changed in place with its size and modification time put back (`touch -r`, `rsync
    /// --inplace -t`) keeps the identity; its change time, which no program can set, tells: the
    /// file is taken only if it changed last by its rename (and mark), within
    /// `FinishGroup.renameAllowance` of the record's save.
    private static func isInPlace(_ finished: ResumeRecord, finalPath: String?, partialExists: Bool, policy: ExistingFilePolicy) -> Bool {
        guard policy != .overwrite, !partialExists, let finalPath, isFinishedFile(finished, at: finalPath) else { return false }
        var info = stat()
        guard lstat(finalPath, &info) == 0 else { return false }
        let savedAt = Int64((finished.updatedAt.timeIntervalSince1970 * 1e9).rounded(.down))
        return FinishedMark.changeTime(info) <= savedAt + FinishGroup.renameAllowance
    }

    /// Whether the file at `path` is the one `finished` marked finished (inode, size, modification time).
    private static func isFinishedFile(_ finished: ResumeRecord, at path: String) -> Bool {
        guard let length = finished.finishedLength, let identity = finished.finishedIdentity, FileIdentity.of(path) == identity else { return false }
        return identity.size == length
    }

    /// Takes over a file another tool left at the destination (`.continueIt`): it becomes the
    /// partial, unproven until the server's bytes match its tail.
    private static func adopt(_ layout: OutputLayout, _ fresh: ResumeRecord, keeper: RecordKeeper, lock: DestinationLock) throws(OutputError)
        -> PartialDownload
    {
        guard let finalPath = layout.finalPath else { throw OutputError(.io, "nothing to continue: the destination has no name yet") }
        var record = fresh
        record.isAdopted = true
        record.keepsOwnMode = true
        do throws(StoreError) {
            // The record first: a crash right after the rename still knows the partial is adopted.
            try keeper.save(&record, syncedLength: 0)
            guard haul_rename_noreplace(finalPath, layout.partialPath) == 0 else {
                let reason = String(cString: strerror(errno))
                keeper.discardStale()
                throw StoreError(.io, "cannot move \(finalPath) aside to continue it: \(reason)", code: errno)
            }
            let file = try PartialFile(path: layout.partialPath)
            record.partialIdentity = try file.identity()
            try keeper.save(&record, syncedLength: file.prefixLength)
            return PartialDownload(layout: layout, sink: .partial(file), record: record, keeper: keeper, lock: lock)
        } catch {
            throw .store(error, path: finalPath)
        }
    }

    private static func refusalError(_ refusal: OpenDecision.Refusal, _ layout: OutputLayout) -> OutputError {
        let finalPath = layout.finalPath ?? layout.partialPath
        switch refusal {
        case .symlink:
            return .symlink(finalPath)
        case .exists:
            return .alreadyExists(finalPath)
        case .fileAndPartialBoth:
            return OutputError(
                .destinationExists, "both \(finalPath) and an unfinished download of it (\(layout.partialPath)) exist; remove one of them", path: finalPath)
        case .notRegular:
            return OutputError(.destinationExists, "\(finalPath) is not a regular file and cannot be continued", path: finalPath)
        }
    }

    static func identity(of file: PartialFile) throws(OutputError) -> FileIdentity {
        do {
            return try file.identity()
        } catch {
            throw .io(error)
        }
    }

    /// A new, empty partial, created exclusively (`O_EXCL`, never through a link). `clearing`: a
    /// partial is there and is removed first (true), is not (false), or was not looked up (nil):
    /// then one in the way is removed and the partial created again, once.
    private static func createPartial(_ layout: OutputLayout, _ request: Request, clearing: Bool?) throws(OutputError) -> PartialFile {
        if clearing == true { try clearPartialPath(layout, request) }
        guard clearing == nil else { return try openPartial(layout, createNew: true) }
        do {
            return try PartialFile(path: layout.partialPath, createNew: true)
        } catch  where error.code == EEXIST {
            try clearPartialPath(layout, request)
            return try openPartial(layout, createNew: true)
        } catch {
            throw .store(error, path: layout.partialPath)
        }
    }

    /// Removes what is at the partial path, unless it is another request's finished download,
    /// still exactly the file its `FinishedMark` names (a file saved under a name that is this
    /// download's partial name, `x.haul-partial` from a URL or `-o`): that file is no partial
    /// of this one, and is refused as a file in the way rather than deleted. This request's own
    /// marked partial (a run killed between the mark and the rename, with no record) is cleared.
    private static func clearPartialPath(_ layout: OutputLayout, _ request: Request) throws(OutputError) {
        if let other = FinishedMark.finishedRequest(at: layout.partialPath),
            !request.provable || other != FinishedMark.requestKey(of: request.fresh)
        {
            throw OutputError(
                .destinationExists,
                "\(layout.partialPath) is the finished download of another request, and this download keeps its unfinished data under that name; move the file away or choose another name",
                path: layout.partialPath)
        }
        unlink(layout.partialPath)
    }

    private static func openPartial(_ layout: OutputLayout, createNew: Bool) throws(OutputError) -> PartialFile {
        do {
            return try PartialFile(path: layout.partialPath, createNew: createNew)
        } catch {
            throw .store(error, path: layout.partialPath)
        }
    }

    /// Creates the directory a download writes into, with its parents, if it is missing.
    private static func createDirectory(_ directory: String) throws(OutputError) {
        guard PathKind.of(directory) != .directory else { return }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw OutputError(.io, "cannot create the directory \(directory): \(error.localizedDescription)", path: directory)
        }
    }
}
