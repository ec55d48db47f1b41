import Foundation
import HaulCore

#if canImport(Glibc)
    import Glibc
#endif

/// The free space of the file system holding a directory, as the kernel reports it.
package enum FreeSpace {
    /// The bytes an unprivileged process may still write on the file system holding `directory`
    /// (`f_bavail * f_frsize` from `statvfs`), or nil when it cannot be measured (the path is
    /// missing or the call fails).
    ///
    /// Blocks reserved for root are not counted, so the figure is what a download can rely on;
    /// a quota may still allow less.
    package static func available(at directory: String) -> Int64? {
        var info = statvfs()
        guard statvfs(directory, &info) == 0 else { return nil }
        let blocks = UInt64(info.f_bavail)
        let blockSize = UInt64(info.f_frsize)
        let (bytes, overflow) = blocks.multipliedReportingOverflow(by: blockSize)
        guard !overflow else { return Int64.max }
        return bytes > UInt64(Int64.max) ? Int64.max : Int64(bytes)
    }

    /// The size of the file system holding `directory` (`f_blocks * f_frsize`), nil when it cannot
    /// be measured: what the default free-space margin scales with (`SpaceCheck.defaultMargin`).
    package static func size(at directory: String) -> Int64? {
        var info = statvfs()
        guard statvfs(directory, &info) == 0 else { return nil }
        let (bytes, overflow) = UInt64(info.f_blocks).multipliedReportingOverflow(by: UInt64(info.f_frsize))
        guard !overflow, bytes <= UInt64(Int64.max) else { return Int64.max }
        return Int64(bytes)
    }

    /// The margin to keep free in `directory`: `requested`, else the default for its file system.
    package static func margin(_ requested: Int64?, at directory: String) -> Int64 {
        requested ?? SpaceCheck.defaultMargin(fileSystemSize: size(at: directory))
    }
}
