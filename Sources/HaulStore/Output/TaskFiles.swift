import CHaulSystem
import Foundation
import HaulCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

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
            if let there = FoundFile.at(target).identity, let here = FoundFile.at(source).identity, there.isSameFile(as: here) { return }
            throw OutputError(.destinationExists, "\(target) exists already; a move never replaces a file", path: target)
        case EXDEV:
            throw OutputError(
                .usage, "\(target) is on another file system than \(source); a move renames within one file system only (it never copies)",
                path: target)
        default: throw OutputError(.io, "cannot move \(source) to \(target): \(String(cString: strerror(code)))", path: target)
        }
    }

    /// Removes the old name `source` of a file just linked at `target`, only while both still name
    /// the same file (a file put at `source` meanwhile is not the download's, and stays). The name
    /// is looked at and removed in one directory held open (a parent swapped for a symlink between
    /// the check and the removal never leads the removal to another file of that name).
    /// `directory`: the directory `source` is in, already held open (reached from the root without
    /// following a symlink); else the directory `source` is in, opened as its path reads now.
    package static func unlinkOldName(_ source: String, linkedAt target: String, in directory: PinnedDirectory? = nil) {
        guard let new = FoundFile.at(target).identity else { return }
        let held: (directory: PinnedDirectory, name: String)
        if let directory, let name = directory.entry(source) {
            held = (directory, name)
        } else if let parent = PinnedDirectory.parent(of: source) {
            held = parent
        } else {
            return
        }
        guard FoundFile.at(held.name, in: held.directory).identity?.isSameFile(as: new) == true else { return }
        unlinkat(held.directory.fd, held.name, 0)
    }

    /// Marks the file at `path` again as the finished download of `request` after it was moved (a
    /// move changes its change time, which the mark bounds): only when it is still exactly
    /// `identity`. Returns whether it is marked.
    /// `pinned`: the directory `path` is in, held open (the file is opened in it, never through a
    /// parent swapped meanwhile).
    package static func markAgain(_ path: String, in pinned: PinnedDirectory? = nil, of request: PartialDownload.Request, identity: FileIdentity)
        -> Bool
    {
        guard request.provable else { return false }
        let flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK
        let fd = pinned.map { openat($0.fd, AbsolutePath.name(of: path), flags) } ?? open(path, flags)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        // Judged by the file opened, not by its path again: a parent swapped for a symlink
        // meanwhile would show another file (or none) there, and the move's own file would lose
        // its proof for good.
        guard case .regular(let found) = FoundFile.of(fd), found == identity else { return false }
        return FinishedMark.mark(fd, request: FinishedMark.requestKey(of: request.fresh), expecting: identity) != nil
    }

    /// `directory`, created if missing, held open by a descriptor reached from `root` one
    /// component at a time without following any symlink (`root` itself may be one): what is
    /// linked into it lands inside `root`, whatever a hostile process swaps under the path after
    /// it was checked. Refused when `directory` is not `root` or below it (byte for byte), or
    /// when one of its components is a symlink or not a directory.
    package static func pinnedDirectory(_ directory: String, under root: String, creating: Bool = true) throws(OutputError) -> PinnedDirectory {
        var prefix = Array(root.utf8)
        let path = Array(directory.utf8)
        if prefix.last != UInt8(ascii: "/") { prefix.append(UInt8(ascii: "/")) }
        guard isWithin(directory, root: root) else {
            throw OutputError(.usage, "\(directory) is not inside \(root)", path: directory)
        }
        var fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw OutputError(.io, "cannot open \(root): \(String(cString: strerror(errno)))", path: root) }
        let components = path.count > prefix.count ? path[prefix.count...].split(separator: UInt8(ascii: "/")) : []
        for component in components {
            let name = String(decoding: component, as: UTF8.self)
            var next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if next < 0, errno == ENOENT, creating {
                _ = mkdirat(fd, name, 0o777)
                next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            }
            let code = errno
            close(fd)
            guard next >= 0 else {
                let why = code == ELOOP || code == ENOTDIR ? "a symbolic link or not a directory" : String(cString: strerror(code))
                throw OutputError(.usage, "\(directory) cannot be reached inside \(root) without leaving it: \(name) is \(why)", path: directory)
            }
            fd = next
        }
        return PinnedDirectory(fd: fd, path: directory)
    }

    /// Whether `path` is `root` or below it, byte for byte (no symlink resolved: what is below is
    /// then reached with `pinnedDirectory`).
    package static func isWithin(_ path: String, root: String) -> Bool {
        var prefix = Array(root.utf8)
        if prefix.last != UInt8(ascii: "/") { prefix.append(UInt8(ascii: "/")) }
        let bytes = Array(path.utf8)
        return bytes == Array(root.utf8) || bytes.starts(with: prefix)
    }

    /// Gives `source` a second name, `name`, in the pinned `directory`, never replacing a file
    /// there, and only when the file linked is `expected` (device and inode; a source whose
    /// parent was swapped meanwhile names another file, which is never linked in). A name that is
    /// already `expected` (a move cut short, asked again) counts as linked.
    package static func linkWithoutReplacing(
        _ source: String, into directory: PinnedDirectory, as name: String, expected: FileIdentity?
    ) throws(OutputError) {
        let target = directory.path(of: name)
        func there() -> FileIdentity? { FoundFile.at(name, in: directory).identity }
        func same(_ a: FileIdentity?, _ b: FileIdentity?) -> Bool {
            guard let a, let b else { return false }
            return a.isSameFile(as: b)
        }
        guard linkat(AT_FDCWD, source, directory.fd, name, 0) == 0 else {
            let code = errno
            switch code {
            case EEXIST:
                let current = FoundFile.at(source).identity
                if same(there(), expected ?? current), expected == nil || same(current, expected) { return }
                throw OutputError(.destinationExists, "\(target) exists already; a move never replaces a file", path: target)
            case EXDEV:
                throw OutputError(
                    .usage, "\(target) is on another file system than \(source); a move renames within one file system only (it never copies)",
                    path: target)
            default: throw OutputError(.io, "cannot move \(source) to \(target): \(String(cString: strerror(code)))", path: target)
            }
        }
        if let expected, !same(there(), expected) {
            unlinkat(directory.fd, name, 0)
            throw OutputError(
                .destinationExists, "\(source) changed while it was being moved (another file is under its name now); nothing was moved", path: source)
        }
    }

    /// Deletes the file at `path` only while it is still `identity` (device and inode), looked at
    /// and removed in one directory held open: reached from `root` without following a symlink
    /// when `root` is given, else opened as its path reads now (either way, a parent swapped
    /// between the check and the removal never leads the deletion to another file of that name).
    /// Gone already counts as deleted.
    package static func delete(_ path: String, ifStill identity: FileIdentity, within root: String?) throws(OutputError) {
        let held: (directory: PinnedDirectory, name: String)
        if let root {
            held = (try pinnedDirectory(AbsolutePath.directory(of: path), under: root, creating: false), AbsolutePath.name(of: path))
        } else if let parent = PinnedDirectory.parent(of: path) {
            held = parent
        } else {
            if errno == ENOENT || errno == ENOTDIR { return }
            throw OutputError(.io, "cannot delete it: \(String(cString: strerror(errno)))", path: path)
        }
        var info = stat()
        guard fstatat(held.directory.fd, held.name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
            if errno == ENOENT { return }
            throw OutputError(.io, "cannot delete it: \(String(cString: strerror(errno)))", path: path)
        }
        guard info.st_mode & S_IFMT == S_IFREG, FileIdentity(info).isSameFile(as: identity) else {
            throw OutputError(.destinationExists, "another file is under its name now (it changed while it was being removed)", path: path)
        }
        guard unlinkat(held.directory.fd, held.name, 0) == 0 || errno == ENOENT else {
            throw OutputError(.io, "cannot delete it: \(String(cString: strerror(errno)))", path: path)
        }
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
    /// `pinned`: the layout's directory held open, whose lock file is then opened in it without
    /// following a symlink.
    package static func lock(_ layout: OutputLayout, in pinned: PinnedDirectory? = nil) throws(OutputError) -> DestinationLock {
        do {
            if let pinned { return try DestinationLock(in: pinned, name: OutputLayout.lockSuffix, key: layout.partialPath) }
            return try DestinationLock(path: layout.lockPath, key: layout.partialPath)
        } catch {
            throw OutputError.store(error, path: layout.finalPath ?? layout.directory)
        }
    }

    /// Takes a destination lock a move's intent names, or throws `.heldElsewhere`.
    package static func lock(_ lock: MoveIntent.Lock) throws(OutputError) -> DestinationLock {
        do {
            return try DestinationLock(path: lock.path, key: lock.key)
        } catch {
            throw OutputError.store(error, path: lock.key)
        }
    }

    /// The name of each file `intent` left over removed, while it is still a name of the very
    /// file the other name is (device and inode; a file put there meanwhile stays), and a finished
    /// file whose mark proved it marked again at the name kept (`request`: the download as the
    /// store now places it), only while it is still exactly the file the intent names.
    /// `pinned`: the directory of the names kept, held open; `removing`: that of the names removed.
    package static func finish(
        _ intent: MoveIntent, of request: PartialDownload.Request, in pinned: PinnedDirectory? = nil, removingIn removing: PinnedDirectory? = nil
    ) {
        for name in intent.leftover {
            unlinkOldName(name.remove, linkedAt: name.keep, in: removing)
            CrashPoint.reach(.afterMoveUnlink)
        }
        for name in intent.leftover {
            guard let identity = name.marked else { continue }
            _ = markAgain(name.keep, in: pinned, of: request, identity: identity)
        }
    }
}

/// A directory held open (see `TaskFiles.pinnedDirectory`): closed when let go.
package final class PinnedDirectory: Sendable {
    let fd: Int32
    /// The path it was reached by (for messages and the paths reported).
    package let path: String

    init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit { close(fd) }

    /// The directory `path` is in, opened as its path reads now (symlinks followed, as a user's
    /// own path may have them), and `path`'s name in it: a name looked at and then removed in it is
    /// one entry, whatever is swapped under the path between the two. Nil (with `errno` set) when
    /// the directory cannot be opened, or `path` names no file in one.
    static func parent(of path: String) -> (directory: PinnedDirectory, name: String)? {
        let bytes = Array(path.utf8)
        let start = bytes.lastIndex(of: UInt8(ascii: "/")).map { $0 + 1 } ?? 0
        let name = String(decoding: bytes[start...], as: UTF8.self)
        guard !name.isEmpty, name != ".", name != ".." else {
            errno = EINVAL
            return nil
        }
        let directory = AbsolutePath.directory(of: path)
        // Opened only to look at and remove names in (O_PATH), as `unlink` needs write and search
        // permission alone: opened for reading, a directory its user may not list (0300, a drop
        // box) was refused, and with it a removal `unlink` makes.
        let fd = haul_open_directory_for_names(directory)
        guard fd >= 0 else { return nil }
        return (PinnedDirectory(fd: fd, path: directory), name)
    }

    /// The path of `name` in this directory.
    func path(of name: String) -> String {
        (path.hasSuffix("/") ? path : path + "/") + name
    }

    /// The name of `path` in this directory, when `path` is directly in it (byte for byte); nil
    /// otherwise.
    package func entry(_ path: String) -> String? {
        let bytes = Array(path.utf8)
        let prefix = Array(self.path(of: "").utf8)
        guard bytes.count > prefix.count, bytes.starts(with: prefix), !bytes[prefix.count...].contains(UInt8(ascii: "/")) else { return nil }
        return String(decoding: bytes[prefix.count...], as: UTF8.self)
    }
}
