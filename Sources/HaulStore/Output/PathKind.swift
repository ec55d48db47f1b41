import Foundation

/// What is at a destination path, looked at without following a symlink at the path itself.
package enum PathKind: Equatable, Sendable {
    /// Nothing is there.
    case missing
    /// A regular file.
    case regular
    /// A directory.
    case directory
    /// A device, FIFO or socket, or a symlink to one (`/dev/stdout`): written to directly.
    case device
    /// A symlink to anything else: never written through, moved or deleted.
    case symlink

    /// What is at `path` now.
    package static func of(_ path: String) -> PathKind {
        var info = stat()
        guard lstat(path, &info) == 0 else { return .missing }
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
