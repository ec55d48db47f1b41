import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A real, deliberately small file system (a tmpfs of a chosen size) on a fresh temporary directory,
/// for tests that must meet `ENOSPC` from the kernel rather than from a fake.
///
/// Mounting needs root (`CAP_SYS_ADMIN`). ``init(sizeBytes:)`` throws with a message naming the
/// command and its output when the mount fails; tests are expected to let that fail them, not skip,
/// because CI runs as root. The file system is unmounted and its directory removed by ``unmount()``
/// or, at the latest, when the object goes away.
///
/// ```swift
/// let disk = try SmallFileSystem(sizeBytes: 2 << 20)
/// let output = disk.file("f")   // writes past 2 MiB fail with ENOSPC
/// ```
package final class SmallFileSystem: Sendable {
    /// The absolute path of the mount point.
    package let path: String
    /// The size the tmpfs was mounted with, in bytes.
    package let sizeBytes: Int

    /// Whether the tmpfs is still mounted by this object (and the mount point still exists).
    private let mounted = Mutex(true)

    static let mountCommand = "/bin/mount"
    static let unmountCommand = "/bin/umount"

    /// Creates a fresh temporary directory and mounts a tmpfs of `sizeBytes` bytes on it.
    /// - Throws: ``TestSupportError`` when the size is not positive, the directory cannot be made,
    ///   or `mount` fails (for example when not running as root); the message says which.
    package init(sizeBytes: Int) throws {
        guard sizeBytes > 0 else {
            throw TestSupportError("SmallFileSystem: the size must be positive, not \(sizeBytes)")
        }
        let directory = try TemporaryDirectory.makeUnique(prefix: "haul-smallfs")
        let arguments = ["-t", "tmpfs", "-o", "size=\(sizeBytes)", "tmpfs", directory]
        let result: ProcessResult
        do {
            result = try ProcessRunner.run(Self.mountCommand, arguments, timeout: 30)
        } catch {
            rmdir(directory)
            throw TestSupportError("SmallFileSystem: \(error)")
        }
        guard result.status == 0 else {
            rmdir(directory)
            throw TestSupportError(
                "SmallFileSystem: `\(Self.mountCommand) \(arguments.joined(separator: " "))` failed with status "
                    + "\(result.status) (running as uid \(getuid()); mounting a tmpfs needs root): "
                    + result.stderr.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        path = directory
        self.sizeBytes = sizeBytes
    }

    deinit {
        unmount()
    }

    /// The path of an entry named `name` on this file system (the entry is not created).
    package func file(_ name: String) -> String {
        path + "/" + name
    }

    /// Unmounts the tmpfs (everything on it is gone) and removes the mount point.
    ///
    /// A busy file system (a process still holds a file open) is detached lazily with `umount -l`,
    /// so the kernel frees it once the last user goes. Safe to call more than once.
    package func unmount() {
        let wasMounted = mounted.withLock { mounted in
            defer { mounted = false }
            return mounted
        }
        guard wasMounted else { return }
        let unmounted = (try? ProcessRunner.run(Self.unmountCommand, [path], timeout: 30))?.status == 0
        if !unmounted {
            _ = try? ProcessRunner.run(Self.unmountCommand, ["-l", path], timeout: 30)
        }
        rmdir(path)
    }

    /// Whether small file systems can be made here: running as root and a 64 KiB tmpfs mounts and unmounts.
    ///
    /// For diagnostics and guards in tooling; tests that need one should create it and let a failure
    /// fail the test, rather than skip when this is false.
    package static var isAvailable: Bool {
        guard geteuid() == 0 else { return false }
        guard let probe = try? SmallFileSystem(sizeBytes: 64 << 10) else { return false }
        probe.unmount()
        return true
    }
}
