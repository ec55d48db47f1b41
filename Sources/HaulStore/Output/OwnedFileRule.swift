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

    /// The file open as `fd`.
    static func of(_ fd: Int32) -> FoundFile {
        var info = stat()
        return of(fstat(fd, &info) == 0 ? info : nil)
    }

    /// What is at `path` now.
    package static func at(_ path: String) -> FoundFile {
        var info = stat()
        return of(lstat(path, &info) == 0 ? info : nil)
    }

    /// What is under `name` in `directory` now (held open: never through a parent swapped since).
    static func at(_ name: String, in directory: PinnedDirectory) -> FoundFile {
        var info = stat()
        return of(fstatat(directory.fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 ? info : nil)
    }

    /// The regular file `info` describes; nil: nothing there.
    private static func of(_ info: stat?) -> FoundFile {
        guard let info else { return .missing }
        guard info.st_mode & S_IFMT == S_IFREG else { return .notRegular }
        return .regular(FileIdentity(info))
    }

    /// The identity of the regular file found, nil for anything else.
    var identity: FileIdentity? {
        if case .regular(let identity) = self { identity } else { nil }
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
            guard current.isSameFile(as: recorded) else {
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
