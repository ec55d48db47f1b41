import Foundation

/// One writer per destination: an exclusive `flock` on a lock file beside the partial, held for a
/// whole run (single downloads and queue runs alike). A second run finds it held and stops, saying
/// which process holds it, instead of writing into the same partial.
///
/// The kernel drops the lock when the holder dies (even by `kill -9`), so a stale lock file never
/// blocks anyone. The holder removes the file while still holding the lock; a process that opened
/// the old file before that notices the file is gone once it gets the lock, and tries again.
public final class DestinationLock {
    public let path: String
    private let fd: Int32

    /// Takes the lock at `path` (created 0600 if missing) or throws `.conflict` naming the holder.
    public init(path: String) throws(StoreError) {
        self.path = path
        for _ in 0..<16 {
            let fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw StoreError.system("cannot open the lock file", path: path) }
            if flock(fd, LOCK_EX | LOCK_NB) != 0 {
                let code = errno
                let holder = Self.holder(fd)
                close(fd)
                guard code == EWOULDBLOCK else { throw StoreError.system("cannot lock", path: path, errno: code) }
                let who = holder.map { "process \($0)" } ?? "another process"
                throw StoreError(.conflict, "\(who) is already downloading to this destination (it holds \(path)); wait for it to finish or stop it")
            }
            var held = stat()
            var current = stat()
            guard fstat(fd, &held) == 0, lstat(path, &current) == 0, held.st_ino == current.st_ino, held.st_dev == current.st_dev else {
                // The previous holder removed the file after we opened it: lock the new one.
                close(fd)
                continue
            }
            let pid = Array("\(getpid())\n".utf8)
            _ = ftruncate(fd, 0)
            _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
            self.fd = fd
            return
        }
        throw StoreError(.io, "cannot lock \(path): it keeps being replaced")
    }

    /// Removes the lock file and releases the lock (in that order, so no one locks a removed file).
    public func release() {
        unlink(path)
        close(fd)
    }

    /// The PID a holder wrote into the lock file, if it is readable.
    private static func holder(_ fd: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        let text = String(decoding: buffer[0..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return Int32(text)
    }
}
