import Foundation
import HaulCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What is at one of a download's places on disk, as removing or moving it sees it (never through
/// a symlink).
package enum FoundFile: Sendable, Equatable {
    case missing
    /// Something that is not a regular file (a symlink, a directory, a device): never Haul's.
    case notRegular
    case regular(FileIdentity)

    /// What is at `path` now.
    package static func at(_ path: String) -> FoundFile {
        var info = stat()
        guard lstat(path, &info) == 0 else { return .missing }
        guard info.st_mode & S_IFMT == S_IFREG else { return .notRegular }
        return .regular(FileIdentity(info))
    }
}

/// Whether a file at one of a download's places is the download's own: the pure rule behind
/// removing a download with its files. A file is its own only when the identity Haul recorded
/// when it made the file proves it; anything else under the same name is someone else's, and is
/// kept, with the reason.
package enum OwnedFileRule {
    package enum Verdict: Sendable, Equatable {
        /// Nothing there.
        case absent
        /// The download's own: it may be deleted.
        case owned
        /// Something else (or something unproven) under the name: kept, for this reason.
        case notOwned(String)
    }

    /// The partial: its own while it is the file (device and inode) its record names. Its size and
    /// times change as it is written, so they prove nothing either way.
    package static func partial(recorded: FileIdentity?, found: FoundFile) -> Verdict {
        switch found {
        case .missing: return .absent
        case .notRegular: return .notOwned("not a regular file (a symbolic link or a directory is never a download's partial)")
        case .regular(let current):
            guard let recorded else { return .notOwned("no record of the partial this download created (its resume record names no file)") }
            guard current.device == recorded.device, current.inode == recorded.inode else {
                return .notOwned(
                    "another file: device \(current.device) inode \(current.inode), not the partial this download created (device \(recorded.device) inode \(recorded.inode))"
                )
            }
            return .owned
        }
    }

    /// A sidecar with no identity of its own (the segment map): its own only beside its own
    /// partial, deleted with it.
    package static func companion(of partial: Verdict, found: FoundFile) -> Verdict {
        switch (found, partial) {
        case (.missing, _): return .absent
        case (.notRegular, _): return .notOwned("not a regular file")
        case (.regular, .owned): return .owned
        case (.regular, _): return .notOwned("the partial beside it is not proven this download's, so neither is this")
        }
    }

    /// The finished file: its own while the mark Haul set on it when it finished proves it
    /// (`markProves`: the same request, the same device, inode, size and modification time, and
    /// no change since). `provable`: whether such a download is marked at all (one with
    /// credentials or headers of its own is not).
    package static func finished(found: FoundFile, provable: Bool, markProves: Bool) -> Verdict {
        switch found {
        case .missing: return .absent
        case .notRegular: return .notOwned("not a regular file (a symbolic link or a directory is never a download's file)")
        case .regular:
            if markProves { return .owned }
            guard provable else {
                return .notOwned("Haul keeps no proof of a download with credentials, a body or headers of its own, so it cannot tell this file is its own")
            }
            return .notOwned("not the file this download finished: another file, or changed since (its finished mark does not match)")
        }
    }

    /// A partial set aside as bad: Haul records no identity for it, so it is never taken as the
    /// download's own.
    package static func unidentified(found: FoundFile) -> Verdict {
        found == .missing ? .absent : .notOwned("Haul records no identity for a partial set aside as bad; look at it and delete it yourself")
    }
}

/// The file operations of removing and moving a download's files: the rule of what is its own is
/// `OwnedFileRule`'s.
package enum TaskFiles {
    /// Whether the finished mark on the file at `path` proves it the finished download of `request`
    /// (and unchanged since); false for a download that is never marked (see `provable`).
    package static func markProves(_ path: String, of request: PartialDownload.Request) -> Bool {
        guard request.provable else { return false }
        return FinishedMark.provenFinished(at: path, request: FinishedMark.requestKey(of: request.fresh)) != nil
    }

    /// Gives `source` a second name, `target`, never replacing a file there (the first step of a
    /// move that survives a crash: until the old name is removed, both name the same file, so
    /// whichever a record names holds it). A `target` that is already a name of the very same
    /// file (a move cut short by a crash, asked again) counts as linked. Refused when another
    /// file is at `target`, and when it is on another file system (no copy).
    package static func linkWithoutReplacing(_ source: String, to target: String) throws(OutputError) {
        guard link(source, target) != 0 else { return }
        let code = errno
        switch code {
        case EEXIST:
            if case .regular(let there) = FoundFile.at(target), case .regular(let here) = FoundFile.at(source), there.device == here.device,
                there.inode == here.inode
            {
                return
            }
            throw OutputError(.destinationExists, "\(target) exists already; a move never replaces a file", path: target)
        case EXDEV:
            throw OutputError(
                .usage, "\(target) is on another file system than \(source); a move renames within one file system only (it never copies)",
                path: target)
        default: throw OutputError(.io, "cannot move \(source) to \(target): \(String(cString: strerror(code)))", path: target)
        }
    }

    /// Removes the old name `source` of a file just linked at `target`, only while both still name
    /// the same file (a file put at `source` meanwhile is not the download's, and stays).
    package static func unlinkOldName(_ source: String, linkedAt target: String) {
        guard case .regular(let old) = FoundFile.at(source), case .regular(let new) = FoundFile.at(target), old.device == new.device,
            old.inode == new.inode
        else { return }
        unlink(source)
    }

    /// Marks the file at `path` again as the finished download of `request` after it was moved (a
    /// move changes its change time, which the mark bounds): only when it is still exactly
    /// `identity`. Returns whether it is marked.
    package static func markAgain(_ path: String, of request: PartialDownload.Request, identity: FileIdentity) -> Bool {
        guard request.provable else { return false }
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return FinishedMark.mark(fd, request: FinishedMark.requestKey(of: request.fresh), expecting: identity) != nil
    }

    /// Creates `directory` and its parents.
    package static func createDirectory(_ directory: String) throws(OutputError) {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw OutputError(.io, "cannot create \(directory): \(error.localizedDescription)", path: directory)
        }
    }
}

extension TaskFiles {
    /// Takes the destination lock of `layout` (one writer per destination), or throws
    /// `.heldElsewhere` naming the process that holds it.
    package static func lock(_ layout: OutputLayout) throws(OutputError) -> DestinationLock {
        do {
            return try DestinationLock(path: layout.lockPath, key: layout.partialPath)
        } catch {
            throw OutputError.store(error, path: layout.finalPath ?? layout.directory)
        }
    }
}
