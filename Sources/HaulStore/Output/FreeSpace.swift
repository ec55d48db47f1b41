import Foundation
import HaulCore

#if canImport(Glibc)
    import Glibc
#endif

/// The free space of the file system holding a directory, as the kernel reports it.
package enum FreeSpace {
    /// What one `statvfs` of a directory's file system says: the bytes an unprivileged process
    /// may still write there, and the file system's size.
    package struct Measure: Sendable, Equatable {
        /// `f_bavail * f_frsize`: blocks reserved for root are not counted, so the figure is what
        /// a download can rely on (a quota may still allow less).
        package let available: Int64
        /// `f_blocks * f_frsize`: what the default free-space margin scales with.
        package let size: Int64

        /// The margin to keep free here: `requested`, else the default for this file system.
        package func margin(_ requested: Int64?) -> Int64 {
            requested ?? SpaceCheck.defaultMargin(fileSystemSize: size)
        }
    }

    /// The file system holding `directory`, in one call; nil when it cannot be measured (the path
    /// is missing or the call fails).
    package static func measure(at directory: String) -> Measure? {
        var info = statvfs()
        guard statvfs(directory, &info) == 0 else { return nil }
        return Measure(available: bytes(UInt64(info.f_bavail), UInt64(info.f_frsize)), size: bytes(UInt64(info.f_blocks), UInt64(info.f_frsize)))
    }

    /// The bytes an unprivileged process may still write on the file system holding `directory`.
    package static func available(at directory: String) -> Int64? {
        measure(at: directory)?.available
    }

    /// `blocks * blockSize`, at most `Int64.max`.
    private static func bytes(_ blocks: UInt64, _ blockSize: UInt64) -> Int64 {
        let (bytes, overflow) = blocks.multipliedReportingOverflow(by: blockSize)
        guard !overflow, bytes <= UInt64(Int64.max) else { return Int64.max }
        return Int64(bytes)
    }
}
