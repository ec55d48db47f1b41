import CHaulSystem
import Foundation
import HaulCore
import HaulStore

/// The output a run writes to, ready for its first attempt.
struct PreparedOutput {
    let sink: OutputSink
    /// The files on disk; nil for a direct output (stdout, a device).
    let layout: OutputLayout?
    /// An earlier run already moved the complete file into place (it died before forgetting the record).
    var alreadyInPlace = false
}

extension DownloadRunner {
    /// Opens the output and loads what an earlier run left: the partial file, its record, or a file
    /// to adopt. Decides nothing about the network.
    func prepare() throws(DownloadError) -> PreparedOutput {
        switch request.destination {
        case .standardOutput:
            return PreparedOutput(sink: .direct(DirectOutput()), layout: nil)
        case .file(let path):
            switch DestinationKind.of(path) {
            case .device:
                do {
                    return PreparedOutput(sink: .direct(try DirectOutput(existing: path)), layout: nil)
                } catch {
                    throw DownloadError(.io, error)
                }
            case .directory:
                throw DownloadError(.usage, "\(path) is a directory; use -d to download into it")
            case .symlink:
                throw DownloadError.symlinkRefusal(path)
            case .none, .regular:
                break
            }
        case .directory:
            break
        }
        guard let layout = OutputLayout.of(request) else {
            return PreparedOutput(sink: .direct(DirectOutput()), layout: nil)
        }
        try Self.createDirectory(layout.directory)
        return try prepareFile(layout)
    }

    private func prepareFile(_ layout: OutputLayout) throws(DownloadError) -> PreparedOutput {
        do {
            destinationLock = try DestinationLock(path: layout.lockPath)
        } catch {
            throw DownloadError(error.kind == .conflict ? .destinationExists : .io, error)
        }
        let keeper = RecordKeeper(store: records(layout))
        self.keeper = keeper
        var loaded: ResumeRecord?
        do {
            loaded = try keeper.load()
        } catch  where error.kind == .corruptRecord {
            // Without a record the partial's bytes are not trusted (see below).
            loaded = nil
        } catch {
            throw DownloadError(.io, error)
        }
        if let existing = loaded, existing.method != record.method || existing.range != record.range {
            // A partial of another request (method, range): not ours to continue.
            loaded = nil
        }
        if loaded?.isAdopted == true, DestinationKind.of(layout.partialPath) == .none {
            // An adoption whose file was put back under its name before the process died.
            loaded = nil
        }
        if let current = loaded, current.finishedLength == nil, DestinationKind.of(layout.partialPath) == .none {
            // The partial it describes is gone (removed by hand): start afresh.
            loaded = nil
        }
        if let finished = loaded, finished.finishedLength != nil {
            if let inPlace = try finishedFileInPlace(finished, layout: layout) { return inPlace }
            // The finished file was changed, moved or replaced since (or --force asks for a new
            // one): the record vouches for nothing any more.
            loaded = nil
        }
        if loaded == nil { keeper.discardStale() }
        if let finalPath = layout.finalPath, case let existing = DestinationKind.of(finalPath), existing != .none {
            switch (request.existingFile, existing) {
            case (_, .symlink):
                throw DownloadError.symlinkRefusal(finalPath)
            case (.refuse, _):
                throw DownloadError.alreadyExists(finalPath)
            case (.overwrite, _):
                break
            case (.continueIt, _) where loaded?.replacesExistingFile == true:
                // An earlier -c found the file did not match and began a new download beside it.
                break
            case (.continueIt, _):
                if loaded != nil {
                    throw DownloadError(
                        .destinationExists, "both \(finalPath) and an unfinished download of it (\(layout.partialPath)) exist; remove one of them")
                }
                unlink(layout.partialPath)
                return try adopt(finalPath, layout: layout)
            }
        }
        guard let loaded else {
            // Bytes without a record (lost, damaged, another request's, or a small download that
            // never wrote one) are not trusted: the path is cleared and the partial created anew,
            // so nothing that was there (a hard link, a planted file) is ever written through.
            unlink(layout.partialPath)
            let file = try Self.openPartial(layout, createNew: true)
            record.partialIdentity = try Self.identity(of: file)
            return PreparedOutput(sink: .partial(file), layout: layout)
        }
        let file = try Self.openPartial(layout, createNew: false)
        record = loaded
        record.partialIdentity = try Self.identity(of: file)
        if loaded.originalURL != request.url.absoluteString {
            // The URL is not the file's identity (a fresh signed link, a mirror, another port): the
            // partial is continued if the server's answer proves it the same file, by its
            // validators and an overlap compared byte for byte; otherwise it restarts.
            // (`partialNeedsProof` stays true until the overlap matched.)
            startNote =
                "the partial download came from another URL (\(Redaction.url(loaded.originalURL))); it is continued only if this server's file proves to be the same"
        }
        if loaded.segments == nil {
            // A map left by an earlier segmented attempt describes nothing any more.
            unlink(layout.segmentMapPath)
        }
        if let trusted = Self.trustedSegments(loaded, layout: layout) {
            // A segmented partial has holes: its record says what is there, not its length.
            file.setPrefixLength(min(trusted.prefix, file.length))
            record.segments = trusted.segments
            record.segmentPrefix = trusted.prefix
            record.volatileSegments = nil
            record.volatileSegmentPrefix = nil
            return PreparedOutput(sink: .partial(file), layout: layout)
        }
        let trusted = loaded.trustedLength(fileLength: file.length, currentBoot: BootID.current)
        if trusted < file.length {
            do {
                try file.truncate(to: trusted)
            } catch {
                throw DownloadError(.io, error)
            }
        }
        return PreparedOutput(sink: .partial(file), layout: layout)
    }

    /// The segment progress to trust: in the boot that wrote them, the mapped file's (updated after
    /// every write, so a killed run loses almost nothing), else the record's.
    static func trustedSegments(_ record: ResumeRecord, layout: OutputLayout) -> (prefix: Int64, segments: [Segment])? {
        guard record.segments != nil else { return nil }
        if let boot = record.bootID, boot == BootID.current, let mapped = SegmentProgressMap.read(path: layout.segmentMapPath) {
            return mapped
        }
        return record.trustedSegments(currentBoot: BootID.current)
    }

    /// The finished file an earlier run put in place and did not get to forget, if it is still
    /// exactly that file (same inode, size and modification time) and no new download is wanted.
    private func finishedFileInPlace(_ finished: ResumeRecord, layout: OutputLayout) throws(DownloadError) -> PreparedOutput? {
        guard request.existingFile != .overwrite, DestinationKind.of(layout.partialPath) == .none,
            let finalPath = layout.finalPath ?? finished.fileName.map(layout.path(forName:)),
            let identity = finished.finishedIdentity, FileIdentity.of(finalPath) == identity,
            identity.size == finished.finishedLength
        else { return nil }
        record = finished
        do {
            // Opened only to be measured; nothing is written.
            return PreparedOutput(sink: .partial(try PartialFile(path: finalPath)), layout: layout, alreadyInPlace: true)
        } catch {
            throw DownloadError(.io, error)
        }
    }

    /// Takes over a file another tool left at the destination (`--continue`): it becomes the partial,
    /// unproven until the server's bytes match its tail.
    private func adopt(_ finalPath: String, layout: OutputLayout) throws(DownloadError) -> PreparedOutput {
        guard DestinationKind.of(finalPath) == .regular else {
            throw DownloadError(.destinationExists, "\(finalPath) is not a regular file and cannot be continued")
        }
        record.isAdopted = true
        record.keepsOwnMode = true
        do throws(StoreError) {
            // The record first: a crash right after the rename still knows the partial is adopted.
            try keeper?.save(&record, syncedLength: 0)
            guard haul_rename_noreplace(finalPath, layout.partialPath) == 0 else {
                let reason = String(cString: strerror(errno))
                keeper?.discardStale()
                throw StoreError(.io, "cannot move \(finalPath) aside to continue it: \(reason)")
            }
            let file = try PartialFile(path: layout.partialPath)
            record.partialIdentity = try file.identity()
            try keeper?.save(&record, syncedLength: file.length)
            return PreparedOutput(sink: .partial(file), layout: layout)
        } catch {
            throw DownloadError(error.kind == .unsafePath ? .destinationExists : .io, error)
        }
    }

    static func identity(of file: PartialFile) throws(DownloadError) -> FileIdentity {
        do {
            return try file.identity()
        } catch {
            throw DownloadError(.io, error)
        }
    }

    private static func openPartial(_ layout: OutputLayout, createNew: Bool) throws(DownloadError) -> PartialFile {
        do {
            return try PartialFile(path: layout.partialPath, createNew: createNew)
        } catch {
            throw DownloadError(error.kind == .unsafePath ? .destinationExists : .io, error)
        }
    }

    /// Creates the directory a download writes into, with its parents, if it is missing.
    static func createDirectory(_ directory: String) throws(DownloadError) {
        guard DestinationKind.of(directory) != .directory else { return }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw DownloadError(.io, "cannot create the directory \(directory): \(error.localizedDescription)")
        }
    }
}

extension DownloadError {
    static func symlinkRefusal(_ path: String) -> DownloadError {
        var error = DownloadError(
            .destinationExists, "\(path) is a symbolic link; Haul never writes through, moves or deletes one (name the real file instead)")
        error.path = path
        return error
    }

    /// A file is at `path` and the request neither replaces nor continues it.
    static func alreadyExists(_ path: String) -> DownloadError {
        var error = DownloadError(
            .destinationExists, "\(path) already exists; use \(setting: .overwrite) to replace it or \(setting: .continueExisting) to continue it")
        error.path = path
        return error
    }
}

/// What is at a destination path, looked at without following a symlink at the path itself.
enum DestinationKind: Equatable {
    case none
    case regular
    case directory
    /// A device, FIFO or socket, or a symlink to one (`/dev/stdout`): written to directly.
    case device
    /// A symlink to anything else: never written through, moved or deleted.
    case symlink

    static func of(_ path: String) -> DestinationKind {
        var info = stat()
        guard lstat(path, &info) == 0 else { return .none }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .regular
        case S_IFDIR: return .directory
        case S_IFLNK:
            var target = stat()
            let kind = stat(path, &target) == 0 ? target.st_mode & S_IFMT : S_IFREG
            return kind == S_IFCHR || kind == S_IFIFO || kind == S_IFSOCK || kind == S_IFBLK ? .device : .symlink
        default: return .device
        }
    }
}
