import Foundation
import HaulCore

/// Where a lock file is: a path (its directory reached as the path says), or a name in a directory
/// held open (`PinnedDirectory`, reached without following a symlink).
struct LockFilePlace: Sendable {
    /// The path, for messages (and the place itself when there is no directory held open).
    let path: String
    private let directory: PinnedDirectory?
    private let name: String

    init(path: String) {
        self.path = path
        directory = nil
        name = AbsolutePath.name(of: path)
    }

    init(directory: PinnedDirectory, name: String) {
        path = directory.path(of: name)
        self.directory = directory
        self.name = name
    }

    /// The same place with `suffix` after its name.
    func suffixed(_ suffix: String) -> LockFilePlace {
        guard let directory else { return LockFilePlace(path: path + suffix) }
        return LockFilePlace(directory: directory, name: name + suffix)
    }

    /// The status of the file there (symlinks followed by a path: a directory reached through one
    /// is the same directory; never in a directory held open).
    func status(following: Bool = true) -> stat? {
        var status = stat()
        if let directory {
            guard fstatat(directory.fd, name, &status, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        } else {
            guard (following ? stat(path, &status) : lstat(path, &status)) == 0 else { return nil }
        }
        return status
    }

    /// The identity of the file there, or nil when there is none.
    func identity() -> LockFiles.FileID? {
        status().map(LockFiles.FileID.init)
    }

    func open(_ flags: Int32, _ mode: mode_t = 0) -> Int32 {
        if let directory { return openat(directory.fd, name, flags, mode) }
        return Foundation.open(path, flags, mode)
    }

    func unlink() {
        if let directory {
            unlinkat(directory.fd, name, 0)
        } else {
            Foundation.unlink(path)
        }
    }

    /// The status of the directory it is in.
    func directoryStatus() -> stat? {
        var status = stat()
        if let directory { return fstat(directory.fd, &status) == 0 ? status : nil }
        return stat(AbsolutePath.directory(of: path), &status) == 0 ? status : nil
    }
}
