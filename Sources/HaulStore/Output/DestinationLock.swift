import Foundation
import HaulCore
import Synchronization

/// One writer per destination, held for a whole run (single downloads and queue runs alike): a
/// POSIX record lock on one byte of the directory's lock file (`OutputLayout.lockPath`), the byte
/// chosen by a 62-bit hash of the partial's name in that directory. A second run finds the byte
/// held and stops, naming the process that holds it (`F_GETLK` tells), instead of writing into
/// the same partial. Within one process the registry refuses the second holder itself: record
/// locks never conflict with their own process.
///
/// A destination is known by its identity, never by its spelling: the directory by its lock
/// file's device and inode (`x`, `./x`, an absolute path and a path through a symlinked directory
/// all reach the same lock file), the file by its name in it. So two spellings of one file take
/// the same byte of the same file, and the process holds one lock file per directory whatever
/// the paths it was reached by.
///
/// One lock file per directory, not one per destination: a batch of many small files no longer
/// creates and removes a file for each of them (on ext4 every such pair also slows the next
/// creations in the directory). Closing any descriptor of a file drops all of the process's locks
/// on it, so a descriptor of a lock file this process holds a lock in is never closed before the
/// last of them is released (a second descriptor, opened through another spelling before the
/// file was recognised, is kept beside the first). The kernel drops the locks when the holder dies
/// (even by `kill -9`). The last holder of a directory's lock file removes it while it holds a lock
/// on the whole file, so no one is left holding a lock on a removed file; a process that opened the
/// old file before that finds it gone once it has its lock, and tries again.
///
/// A directory others may write to (`/tmp`, a group's folder) gets a lock file they may lock
/// too (mode 0666, or 0660 for a group's), so one user's lock file never locks another out; a
/// private directory's is 0600, so no other user can take its locks. A lock file another user
/// left that this one cannot open (an older Haul made it 0600) is stepped around: this user's
/// runs then lock in `.haul-lock-UID` beside it, and only their own downloads exclude each other
/// there (another user's partial is theirs alone to write anyway).
package final class DestinationLock: Sendable {
    /// The directory's lock file.
    package let path: String
    /// The byte of the lock file this destination's lock is on.
    let slot: Int64
    private let file: LockFiles.FileID
    private let released = Atomic<Bool>(false)

    /// Takes the lock of the destination whose partial is `key` (its name in the directory of
    /// `path` is what counts), in the lock file at `path` (created if missing), or throws
    /// `.heldElsewhere` naming the holder.
    package init(path: String, key: String) throws(StoreError) {
        self.path = path
        slot = Self.slot(forPartial: key)
        file = try LockFiles.shared.lock(slot, at: LockFilePlace(path: path))
    }

    /// The same, the lock file named `name` in `directory` (held open, reached without following a
    /// symlink: a parent swapped for one after the check never puts the lock file elsewhere, where
    /// it would lock nothing the directory's other runs see).
    package init(in directory: PinnedDirectory, name: String, key: String) throws(StoreError) {
        let place = LockFilePlace(directory: directory, name: name)
        path = place.path
        slot = Self.slot(forPartial: key)
        file = try LockFiles.shared.lock(slot, at: place)
    }

    /// Releases the lock; the last holder in this process removes the lock file if no other
    /// process holds a lock in it. Safe to call again.
    package func release() {
        // Once: the same destination may be locked again by this process meanwhile.
        guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
        LockFiles.shared.unlock(slot, in: file)
    }

    /// The byte for the destination whose partial is `key`: its name in its directory, however
    /// the directory was spelled.
    static func slot(forPartial key: String) -> Int64 {
        slot(of: AbsolutePath.name(of: key))
    }

    /// FNV-1a of `key`, kept within 62 bits (a positive `off_t`).
    static func slot(of key: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return Int64(hash & 0x3fff_ffff_ffff_ffff)
    }
}

/// The process's open lock files, known by device and inode, and the bytes it holds in each.
final class LockFiles: Sendable {
    static let shared = LockFiles()

    /// A lock file's identity.
    struct FileID: Hashable, Sendable {
        let device: UInt64
        let inode: UInt64

        init(_ status: stat) {
            device = UInt64(status.st_dev)
            inode = UInt64(status.st_ino)
        }
    }

    private struct Open {
        /// Where it was first opened (removed there by the last holder).
        let place: LockFilePlace
        /// Every descriptor of it this process has open: the first locks, the others wait to be
        /// closed with it (closing one would drop the locks).
        var descriptors: [Int32]
        var held: Set<Int64>
        var fd: Int32 { descriptors[0] }
    }

    private let files = Mutex<[FileID: Open]>([:])

    func lock(_ slot: Int64, at place: LockFilePlace) throws(StoreError) -> FileID {
        let path = place.path
        let result: Result<FileID, StoreError> = files.withLock { files in
            do throws(StoreError) {
                let (id, file) = try Self.entry(for: place, in: &files)
                guard !file.held.contains(slot) else {
                    Self.closeIfUnused(id, in: &files)
                    throw StoreError(
                        .heldElsewhere,
                        "another download or call in this process, process \(getpid()), holds this destination (a lock in \(path)); wait for it to finish or stop it"
                    )
                }
                var range = Self.range(F_WRLCK, slot)
                guard fcntl(file.fd, F_SETLK, &range) == 0 else {
                    let code = errno
                    var probe = Self.range(F_WRLCK, slot)
                    let holder = fcntl(file.fd, F_GETLK, &probe) == 0 && probe.l_type != F_UNLCK ? probe.l_pid : nil
                    Self.closeIfUnused(id, in: &files)
                    guard code == EAGAIN || code == EACCES else { throw StoreError.system("cannot lock", path: path, errno: code) }
                    throw Self.conflict(path, holder: holder)
                }
                files[id]?.held.insert(slot)
                return .success(id)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    func unlock(_ slot: Int64, in id: FileID) {
        files.withLock { files in
            guard var file = files[id], file.held.remove(slot) != nil else { return }
            guard file.held.isEmpty else {
                var range = Self.range(F_UNLCK, slot)
                _ = fcntl(file.fd, F_SETLK, &range)
                files[id] = file
                return
            }
            files[id] = nil
            // The last lock of this process here: a lock on the whole file (it replaces this
            // process's own byte) succeeds only if no other process holds one, and then the file
            // is removed before the descriptors close (if it is still the file at its path, and
            // this user may: in a sticky directory only its owner can).
            var whole = Self.range(F_WRLCK, 0, length: 0)
            if fcntl(file.fd, F_SETLK, &whole) == 0, file.place.identity() == id { file.place.unlink() }
            for fd in file.descriptors { close(fd) }
        }
    }

    /// The entry of the lock file at `place`, opened now unless this process has it open already
    /// (by whatever spelling).
    private static func entry(for place: LockFilePlace, in files: inout [FileID: Open]) throws(StoreError) -> (FileID, Open) {
        if let id = place.identity(), let open = files[id] { return (id, open) }
        let (fd, id) = try open(place)
        if var known = files[id] {
            // Reached through a spelling not recognised before the open (the file appeared
            // meanwhile): this descriptor stays open beside the first.
            known.descriptors.append(fd)
            files[id] = known
            return (id, known)
        }
        let fresh = Open(place: place, descriptors: [fd], held: [])
        files[id] = fresh
        return (id, fresh)
    }

    /// Forgets and closes a lock file this process holds no lock in.
    private static func closeIfUnused(_ id: FileID, in files: inout [FileID: Open]) {
        guard let file = files[id], file.held.isEmpty else { return }
        files[id] = nil
        for fd in file.descriptors { close(fd) }
    }

    /// Opens the lock file at `place` (creating it if missing), making sure the descriptor is the
    /// file now there (a last holder elsewhere may remove it between the open and the first lock).
    /// Another user's file this one may not open is stepped around (`.haul-lock-UID`).
    private static func open(_ place: LockFilePlace) throws(StoreError) -> (Int32, FileID) {
        var place = place
        for _ in 0..<16 {
            let fd: Int32
            let path = place.path
            switch openOrCreate(place) {
            case .success(let opened):
                fd = opened
            case .failure(let failure) where failure.code == EACCES && !path.hasSuffix("-\(getuid())"):
                place = place.suffixed("-\(getuid())")
                continue
            case .failure(let failure):
                throw StoreError.system("cannot open the lock file", path: path, errno: failure.code)
            }
            // A shared lock on a byte no destination uses holds the file while it is checked.
            var anchor = range(F_RDLCK, Int64.max - 1)
            guard fcntl(fd, F_SETLKW, &anchor) == 0 else {
                let code = errno
                close(fd)
                throw StoreError.system("cannot lock", path: path, errno: code)
            }
            var held = stat()
            guard fstat(fd, &held) == 0, let current = place.status(following: false), held.st_ino == current.st_ino, held.st_dev == current.st_dev
            else {
                close(fd)
                continue
            }
            return (fd, FileID(held))
        }
        throw StoreError(.io, "cannot lock \(place.path): it keeps being replaced")
    }

    /// The lock file at `path` opened for locking: an existing one as it is (another user's too:
    /// no `O_CREAT`, which Linux refuses on another's file in a sticky directory), else a new one
    /// with the mode its directory calls for.
    private static func openOrCreate(_ place: LockFilePlace) -> Result<Int32, OpenFailure> {
        let existing = place.open(O_RDWR | O_NOFOLLOW | O_CLOEXEC)
        if existing >= 0 { return .success(existing) }
        guard errno == ENOENT else { return .failure(OpenFailure(code: errno)) }
        let mode = creationMode(directory: place.directoryStatus())
        let created = place.open(O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard created >= 0 else {
            // Made by another process meanwhile: open that one.
            if errno == EEXIST { return openOrCreate(place) }
            return .failure(OpenFailure(code: errno))
        }
        // Whatever the umask: the mode is what lets the directory's other writers lock here.
        _ = fchmod(created, mode)
        return .success(created)
    }

    /// Why a lock file did not open: its errno.
    private struct OpenFailure: Error {
        let code: Int32
    }

    /// 0600 in a directory only its owner may write to; 0660 where its group may; 0666 where
    /// anyone may (`/tmp`).
    static func creationMode(directory status: stat?) -> mode_t {
        guard let status else { return 0o600 }
        if status.st_mode & S_IWOTH != 0 { return 0o666 }
        if status.st_mode & S_IWGRP != 0 { return 0o660 }
        return 0o600
    }

    private static func range(_ type: Int32, _ start: Int64, length: Int64 = 1) -> flock {
        var range = flock()
        range.l_type = Int16(type)
        range.l_whence = Int16(SEEK_SET)
        range.l_start = off_t(start)
        range.l_len = off_t(length)
        return range
    }

    private static func conflict(_ path: String, holder: Int32?) -> StoreError {
        let who = holder.map { "process \($0)" } ?? "another process"
        return StoreError(.heldElsewhere, "\(who) is already downloading to this destination (it holds a lock in \(path)); wait for it to finish or stop it")
    }
}
