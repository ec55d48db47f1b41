import Foundation
import HaulCore

/// Small POSIX helpers shared by the store's files.
public enum FileIO {
    /// Writes every byte, retrying short writes and EINTR.
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(StoreError) {
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
    public static func pwriteAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64, path: String) throws(StoreError) {
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

    /// Makes a rename or unlink in this file's directory durable. Best effort: some file systems refuse.
    public static func syncDirectory(containing path: String) {
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
