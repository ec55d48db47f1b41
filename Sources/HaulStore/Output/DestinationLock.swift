import Foundation
import Synchronization

/// One writer per destination, held for a whole run (single downloads and queue runs alike): a
/// POSIX record lock on one byte of the directory's lock file (`OutputLayout.lockPath`), the byte
/// chosen by a 62-bit hash of the destination's partial path. A second run finds the byte held and
/// stops, naming the process that holds it (`F_GETLK` tells), instead of writing into the same
/// partial. Within one process the registry refuses the second holder itself: record locks never
/// conflict with their own process.
///
/// One lock file per directory, not one per destination: a batch of many small files no longer
/// creates and removes a file for each of them (on ext4 every such pair also slows the next
/// creations in the directory). The process keeps one descriptor per directory (closing any
/// descriptor of the file would drop all of the process's locks on it). The kernel drops the locks
/// when the holder dies (even by `kill -9`). The last holder of a directory's lock file removes it
/// while it holds a lock on the whole file, so no one is left holding a lock on a removed file; a
/// process that opened the old file before that finds it gone once it has its lock, and tries again.
public final class DestinationLock: Sendable {
    /// The directory's lock file.
    public let path: String
    /// The byte of the lock file this destination's lock is on.
    let slot: Int64
    private let released = Atomic<Bool>(false)

    /// Takes the lock of the destination whose partial is `key`, in the lock file at `path`
    /// (created 0600 if missing), or throws `.conflict` naming the holder.
    public init(path: String, key: String) throws(StoreError) {
        self.path = path
        slot = Self.slot(of: key)
        try LockFiles.shared.lock(slot, in: path)
    }

    /// Releases the lock; the last holder in this process removes the lock file if no other
    /// process holds a lock in it. Safe to call again.
    public func release() {
        // Once: the same destination may be locked again by this process meanwhile.
        guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
        LockFiles.shared.unlock(slot, in: path)
    }

    /// The byte for a destination: FNV-1a of its partial path, kept within 62 bits (a positive `off_t`).
    static func slot(of key: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return Int64(hash & 0x3fff_ffff_ffff_ffff)
    }
}

/// The process's open lock files, one descriptor per directory, and the bytes it holds in each.
final class LockFiles: Sendable {
    static let shared = LockFiles()

    private struct Open {
        var fd: Int32
        var held: Set<Int64>
    }

    private let files = Mutex<[String: Open]>([:])

    func lock(_ slot: Int64, in path: String) throws(StoreError) {
        let result: Result<Void, StoreError> = files.withLock { files in
            do throws(StoreError) {
                var file: Open
                if let open = files[path] {
                    file = open
                } else {
                    file = try Self.open(path)
                }
                guard !file.held.contains(slot) else {
                    if file.held.isEmpty { close(file.fd) }
                    throw Self.conflict(path, holder: getpid())
                }
                var range = Self.range(F_WRLCK, slot)
                guard fcntl(file.fd, F_SETLK, &range) == 0 else {
                    let code = errno
                    var probe = Self.range(F_WRLCK, slot)
                    let holder = fcntl(file.fd, F_GETLK, &probe) == 0 && probe.l_type != F_UNLCK ? probe.l_pid : nil
                    if file.held.isEmpty { close(file.fd) }
                    guard code == EAGAIN || code == EACCES else { throw StoreError.system("cannot lock", path: path, errno: code) }
                    throw Self.conflict(path, holder: holder)
                }
                file.held.insert(slot)
                files[path] = file
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
    }

    func unlock(_ slot: Int64, in path: String) {
        files.withLock { files in
            guard var file = files[path], file.held.remove(slot) != nil else { return }
            guard file.held.isEmpty else {
                var range = Self.range(F_UNLCK, slot)
                _ = fcntl(file.fd, F_SETLK, &range)
                files[path] = file
                return
            }
            files[path] = nil
            // The last lock of this process here: a lock on the whole file (it replaces this
            // process's own byte) succeeds only if no other process holds one, and then the file
            // is removed before the descriptor closes.
            var whole = Self.range(F_WRLCK, 0, length: 0)
            if fcntl(file.fd, F_SETLK, &whole) == 0 { unlink(path) }
            close(file.fd)
        }
    }

    /// Opens the lock file at `path`, making sure the descriptor is the file now at that path
    /// (a last holder elsewhere may remove it between the open and the first lock).
    private static func open(_ path: String) throws(StoreError) -> Open {
        for _ in 0..<16 {
            let fd = Foundation.open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw StoreError.system("cannot open the lock file", path: path) }
            // A shared lock on a byte no destination uses holds the file while it is checked.
            var anchor = range(F_RDLCK, Int64.max - 1)
            guard fcntl(fd, F_SETLKW, &anchor) == 0 else {
                close(fd)
                throw StoreError.system("cannot lock", path: path)
            }
            var held = stat()
            var current = stat()
            guard fstat(fd, &held) == 0, lstat(path, &current) == 0, held.st_ino == current.st_ino, held.st_dev == current.st_dev else {
                close(fd)
                continue
            }
            return Open(fd: fd, held: [])
        }
        throw StoreError(.io, "cannot lock \(path): it keeps being replaced")
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
        return StoreError(.conflict, "\(who) is already downloading to this destination (it holds a lock in \(path)); wait for it to finish or stop it")
    }
}
