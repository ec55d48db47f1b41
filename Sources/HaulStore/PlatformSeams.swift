import CHaulSystem
import Foundation
import HaulCore

/// Every call whose Linux and Apple forms differ in the store, in one place.
///
/// Each is one small function: a Linux body, tested here, and an Apple body written against
/// Darwin's documented call (sysctl(3), fcntl(2), fsync(2)) that no machine testing Haul compiles.
/// The C ones (preallocation, writeback hints, the no-replace rename) are in CHaulSystem's
/// `haul_system.c`, the digests in HaulChecksum's `PlatformSeams.swift`. Nothing else in the store
/// asks which platform it runs on.
enum PlatformSeams {
    /// The running boot's identity: `/proc/sys/kernel/random/boot_id` on Linux, the
    /// `kern.bootsessionuuid` sysctl on Apple platforms (both a UUID made at each boot); nil where
    /// there is none.
    static func bootID() -> String? {
        #if os(Linux)
            guard let text = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8) else { return nil }
            let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
            return trimmed.isEmpty ? nil : trimmed
        #elseif canImport(Darwin)
            var text = [UInt8](repeating: 0, count: 64)
            var size = text.count
            guard sysctlbyname("kern.bootsessionuuid", &text, &size, nil, 0) == 0 else { return nil }
            let uuid = String(decoding: text.prefix { $0 != 0 }, as: UTF8.self)
            return uuid.isEmpty ? nil : uuid
        #else
            return nil
        #endif
    }

    /// Makes the bytes written through `fd` durable, with the size that reaches them: fdatasync
    /// on Linux; on Apple platforms `F_FULLFSYNC`, since fsync there only hands the data to the
    /// drive, which may keep it in its cache (fsync(2)), with fsync where the file system refuses.
    static func syncData(_ fd: Int32, path: String) throws(StoreError) {
        LoopThread.mustNotBlock("a sync of \(path)")
        #if os(Linux)
            guard fdatasync(fd) == 0 else { throw StoreError.system("cannot sync", path: path) }
        #elseif canImport(Darwin)
            try syncToStorage(fd, path: path)
        #else
            guard fsync(fd) == 0 else { throw StoreError.system("cannot sync", path: path) }
        #endif
    }

    /// Makes everything written to the file system that holds `fd` durable in one call, where the
    /// platform has one that reports a failure to write any of it: syncfs on Linux 5.8 and later
    /// (earlier kernels return success even when writeback failed). False where there is none:
    /// the caller syncs each file.
    static func syncFileSystem(_ fd: Int32, path: String) throws(StoreError) -> Bool {
        LoopThread.mustNotBlock("a sync of the file system holding \(path)")
        #if os(Linux)
            guard syncfsReportsErrors else { return false }
            guard haul_sync_file_system(fd) == 0 else { throw StoreError.system("cannot sync the file system of", path: path) }
            return true
        #else
            return false
        #endif
    }

    #if os(Linux)
        /// Whether this kernel's syncfs reports writeback errors (5.8 and later), read once.
        private static let syncfsReportsErrors: Bool = {
            var names = utsname()
            guard uname(&names) == 0 else { return false }
            let release = withUnsafeBytes(of: &names.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            let numbers = release.split(separator: ".").prefix(2).map { Int($0.prefix { $0.isNumber }) ?? 0 }
            guard numbers.count == 2 else { return false }
            return numbers[0] > 5 || (numbers[0] == 5 && numbers[1] >= 8)
        }()
    #endif

    /// Makes a file durable with all its metadata (a record before its rename, a directory after
    /// one): fsync on Linux, `F_FULLFSYNC` (else fsync) on Apple platforms.
    static func syncFile(_ fd: Int32, path: String) throws(StoreError) {
        #if os(Linux)
            guard fsync(fd) == 0 else { throw StoreError.system("cannot sync", path: path) }
        #elseif canImport(Darwin)
            try syncToStorage(fd, path: path)
        #else
            guard fsync(fd) == 0 else { throw StoreError.system("cannot sync", path: path) }
        #endif
    }

    #if canImport(Darwin)
        /// `F_FULLFSYNC` asks the drive to write its cache to permanent storage; file systems
        /// without it (some network and FAT volumes) refuse it, and then fsync is the best there is.
        private static func syncToStorage(_ fd: Int32, path: String) throws(StoreError) {
            if fcntl(fd, F_FULLFSYNC) != -1 { return }
            guard fsync(fd) == 0 else { throw StoreError.system("cannot sync", path: path) }
        }
    #endif

    /// Reserves the file's blocks up to `length` without writing them (`haul_preallocate`:
    /// fallocate on Linux, `F_PREALLOCATE` on Apple platforms). Throws `.noSpace` when the disk
    /// cannot hold the file, `.io` with EOPNOTSUPP where the file system cannot reserve.
    static func preallocate(_ fd: Int32, length: Int64, path: String) throws(StoreError) {
        guard haul_preallocate(fd, length) == 0 else { throw StoreError.system("cannot reserve space for", path: path) }
    }

    /// Asks the kernel to start writing a range to disk without waiting (`haul_start_writeback`:
    /// sync_file_range on Linux, nothing on Apple platforms). Best effort: a failure only leaves
    /// more to the sync that makes the file durable.
    static func startWriteback(_ fd: Int32, offset: Int64, length: Int64) {
        _ = haul_start_writeback(fd, offset, length)
    }

    /// The process's umask, read without changing it (umask(2) can only read by setting, which
    /// would change it for every thread for a moment): the `Umask:` line of `/proc/self/status`
    /// on Linux; on Apple platforms, which have no /proc, the bits a scratch file created with
    /// mode 0777 loses. nil when it cannot be read.
    static func processUmask() -> mode_t? {
        #if os(Linux)
            let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
            let line = status.split(separator: "\n").first { $0.hasPrefix("Umask:") }
            return line.flatMap { mode_t($0.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8) }
        #elseif canImport(Darwin)
            let path = NSTemporaryDirectory() + "haul-umask-\(getpid())-\(UUID().uuidString)"
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o777)
            guard fd >= 0 else { return nil }
            defer {
                close(fd)
                unlink(path)
            }
            var info = stat()
            guard fstat(fd, &info) == 0 else { return nil }
            return ~info.st_mode & 0o777
        #else
            return nil
        #endif
    }
}
