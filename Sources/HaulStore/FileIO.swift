import Foundation
import HaulCore

/// Small POSIX helpers shared by the store's files.
package enum FileIO {
    /// Writes every byte, retrying short writes and EINTR.
    package static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(StoreError) {
        guard var pointer = bytes.baseAddress else { return }
        var remaining = bytes.count
        while remaining > 0 {
            let written = write(fd, pointer, remaining)
            if written < 0 {
                if errno == EINTR { continue }
                throw StoreError.system("cannot write to", path: path)
            }
            remaining -= written
            pointer += written
        }
    }

    /// Writes every byte at `offset`, retrying short writes and EINTR.
    package static func pwriteAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64, path: String) throws(StoreError) {
        guard var pointer = bytes.baseAddress else { return }
        var remaining = bytes.count
        var position = offset
        while remaining > 0 {
            let written = pwrite(fd, pointer, remaining, off_t(position))
            if written < 0 {
                if errno == EINTR { continue }
                throw StoreError.system("cannot write to", path: path)
            }
            remaining -= written
            pointer += written
            position += Int64(written)
        }
    }

    /// Replaces the file at `path` with `bytes` atomically: a new 0600 file at `temporary`, written
    /// whole (and synced when `durably`), renamed over `path`, then (when `durably`) the directory
    /// synced. A crash leaves the old file or the new one, never a torn mix; on a failure the
    /// temporary is removed and `path` is as it was.
    package static func replace(_ path: String, with bytes: some ContiguousBytes, temporary: String, durably: Bool) throws(StoreError) {
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StoreError.system("cannot create", path: temporary) }
        var failure: StoreError?
        bytes.withUnsafeBytes { raw in
            do throws(StoreError) {
                try writeAll(fd, raw, path: temporary)
                if durably { try PlatformSeams.syncFile(fd, path: temporary) }
            } catch {
                failure = error
            }
        }
        close(fd)
        if failure == nil, rename(temporary, path) != 0 { failure = StoreError.system("cannot replace", path: path) }
        if let failure {
            unlink(temporary)
            throw failure
        }
        if durably { syncDirectory(containing: path) }
    }

    /// Whether anything (a symlink included, not followed) is at `path`.
    package static func exists(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0
    }

    /// The size of the regular file at `path` (a symlink not followed); nil for anything else.
    package static func regularFileSize(_ path: String) -> Int64? {
        var status = stat()
        guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        return Int64(status.st_size)
    }

    /// Makes a rename or unlink in this file's directory durable. Best effort: some file systems refuse.
    package static func syncDirectory(containing path: String) {
        LoopThread.mustNotBlock("a sync of the directory of \(path)")
        let directory = AbsolutePath.directory(of: path)
        let fd = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        do {
            try PlatformSeams.syncFile(fd, path: directory)
        } catch {
            // Best effort, as documented: the rename itself has happened either way.
        }
    }
}
