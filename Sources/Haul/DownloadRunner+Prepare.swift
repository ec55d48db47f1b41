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
            if let kind = Self.fileKind(path), kind != S_IFREG, kind != S_IFDIR {
                do {
                    return PreparedOutput(sink: .direct(try DirectOutput(existing: path)), layout: nil)
                } catch {
                    throw DownloadError(.io, error.message)
                }
            }
            if Self.fileKind(path) == S_IFDIR {
                throw DownloadError(.usage, "\(path) is a directory; use -d to download into it")
            }
            let layout = OutputLayout.file(path)
            try Self.createDirectory(layout.directory)
            return try prepareFile(layout)
        case .directory(let directory):
            try Self.createDirectory(directory)
            if request.existingFile == .continueIt {
                // Adopting a file needs its name before the request: take it from the URL, as wget -c does.
                let name = FileNameSanitizer.destinationName(contentDisposition: nil, url: request.url)
                return try prepareFile(.file((directory as NSString).appendingPathComponent(name)))
            }
            return try prepareFile(.directory(directory, url: request.url))
        }
    }

    private func prepareFile(_ layout: OutputLayout) throws(DownloadError) -> PreparedOutput {
        let recordFile = records(layout)
        var loaded: ResumeRecord?
        do {
            loaded = try recordFile.load()
        } catch where error.kind == .corruptRecord {
            // The partial's bytes are kept; without a record they are proven by the overlap check.
            loaded = nil
        } catch {
            throw DownloadError(.io, error.message)
        }
        let partialExists = Self.fileKind(layout.partialPath) != nil
        if let existing = loaded, existing.originalURL != record.originalURL || existing.method != record.method || existing.range != record.range {
            // A partial from another download: not ours to continue.
            loaded = nil
            if partialExists { unlink(layout.partialPath) }
            recordFile.remove()
        }
        if let loaded, let finished = loaded.finishedLength, !partialExists,
           let finalPath = layout.finalPath ?? loaded.fileName.map(layout.path(forName:)),
           Self.fileSize(finalPath) == finished {
            record = loaded
            recordStored = true
            do {
                // Opened only to be synced and measured; nothing is written.
                let file = try PartialFile(path: finalPath)
                return PreparedOutput(sink: .partial(file), layout: layout, alreadyInPlace: true)
            } catch {
                throw DownloadError(.io, error.message)
            }
        }
        let finalExists = layout.finalPath.map { Self.fileKind($0) != nil } ?? false
        if finalExists, let finalPath = layout.finalPath {
            switch request.existingFile {
            case .refuse where mayOwnExistingFile && loaded == nil && !partialExists:
                return try adopt(finalPath, layout: layout)
            case .refuse:
                throw DownloadError(.destinationExists, "\(finalPath) already exists; use --force to replace it or -c to continue it")
            case .overwrite:
                break
            case .continueIt:
                if loaded != nil || partialExists {
                    throw DownloadError(.destinationExists, "both \(finalPath) and an unfinished download of it (\(layout.partialPath)) exist; remove one of them")
                }
                return try adopt(finalPath, layout: layout)
            }
        }
        let file: PartialFile
        do {
            file = try PartialFile(path: layout.partialPath)
        } catch {
            throw DownloadError(.io, error.message)
        }
        if let loaded {
            record = loaded
            recordStored = true
            if let trusted = loaded.trustedSegments(currentBoot: BootID.current) {
                // A segmented partial has holes: its record says what is there, not its length.
                file.setPrefixLength(min(trusted.prefix, file.length))
                record.segments = trusted.segments
                record.segmentPrefix = trusted.prefix
                record.volatileSegments = nil
                record.volatileSegmentPrefix = nil
                record.originalURL = request.url.absoluteString
                return PreparedOutput(sink: .partial(file), layout: layout)
            }
            let trusted = loaded.trustedLength(fileLength: file.length, currentBoot: BootID.current)
            if trusted < file.length {
                do {
                    try file.truncate(to: trusted)
                } catch {
                    throw DownloadError(.io, error.message)
                }
            }
            // The request may carry a newer URL for the same download (a refreshed signed link).
            record.originalURL = request.url.absoluteString
        } else if file.length > 0 {
            // Bytes without a record (lost, damaged, or a small download that never wrote one):
            // nothing says which version they are or whether a segmented download left holes in
            // them, so they are not trusted.
            do {
                try file.truncate(to: 0)
            } catch {
                throw DownloadError(.io, error.message)
            }
        }
        return PreparedOutput(sink: .partial(file), layout: layout)
    }

    /// Takes over a file another tool left at the destination (`--continue`): it becomes the partial,
    /// unproven until the server's bytes match its tail.
    private func adopt(_ finalPath: String, layout: OutputLayout) throws(DownloadError) -> PreparedOutput {
        guard Self.fileKind(finalPath) == S_IFREG else {
            throw DownloadError(.destinationExists, "\(finalPath) is not a regular file and cannot be continued")
        }
        record.isAdopted = true
        let recordFile = records(layout)
        do throws(StoreError) {
            // The record first: a crash right after the rename still knows the partial is adopted.
            record.syncedLength = 0
            try recordFile.save(record)
            recordStored = true
            guard rename(finalPath, layout.partialPath) == 0 else {
                recordFile.remove()
                throw StoreError(.io, "cannot move \(finalPath) aside to continue it: \(String(cString: strerror(errno)))")
            }
            let file = try PartialFile(path: layout.partialPath)
            record.syncedLength = file.length
            try recordFile.save(record)
            return PreparedOutput(sink: .partial(file), layout: layout)
        } catch {
            throw DownloadError(.io, error.message)
        }
    }

    /// Creates the directory a download writes into, with its parents, if it is missing.
    static func createDirectory(_ directory: String) throws(DownloadError) {
        guard fileKind(directory) != S_IFDIR else { return }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw DownloadError(.io, "cannot create the directory \(directory): \(error.localizedDescription)")
        }
    }

    /// The size of the regular file at `path`, nil if there is none.
    static func fileSize(_ path: String) -> Int64? {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return Int64(info.st_size)
    }

    /// The type bits of what is at `path` (following symlinks), nil if nothing is there.
    static func fileKind(_ path: String) -> mode_t? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return info.st_mode & S_IFMT
    }
}
