/// Whether the bytes a download still needs fit in the free space of its destination.
package enum SpaceVerdict: Equatable, Sendable {
    /// The remaining bytes plus the safety margin fit in the free space.
    case fits
    /// The remaining length is not known (no `Content-Length`), so nothing can be decided in advance.
    case unknown
    /// The remaining bytes plus the margin exceed the free space; `needed` includes the margin.
    case tooSmall(needed: Int64, available: Int64)
}

/// The pure decision behind the free-space pre-check: it compares numbers and does no I/O.
///
/// The caller measures the free space (HaulStore's `FreeSpace`) and works out how many bytes are still
/// to be written (the final length minus what the partial file already holds).
package enum SpaceCheck {
    /// The most the default margin keeps free.
    package static let defaultMarginCap: Int64 = 16 << 20

    /// The margin kept free when a download names none: 1% of the file system's size, at most
    /// `defaultMarginCap` (16 MiB). A fixed 16 MiB would refuse even a small file on a small disk
    /// (a phone's, a container's); an unknown size gets the cap.
    package static func defaultMargin(fileSystemSize: Int64?) -> Int64 {
        guard let fileSystemSize, fileSystemSize > 0 else { return defaultMarginCap }
        return min(defaultMarginCap, fileSystemSize / 100)
    }

    /// Whether lowering the margin could make a refused download fit: the bytes it still needs fit
    /// in the free space without one (or their number is unknown). Otherwise no setting helps,
    /// and none is hinted.
    package static func marginIsTheObstacle(bytesStillNeeded: Int64?, available: Int64) -> Bool {
        guard let bytesStillNeeded else { return true }
        return max(0, bytesStillNeeded) <= available
    }

    /// Judges whether `bytesStillNeeded` plus `margin` fit in `available` bytes.
    ///
    /// - Parameters:
    ///   - bytesStillNeeded: the bytes still to be written, or nil when the total length is unknown.
    ///     A negative value (a partial longer than the announced length) counts as zero.
    ///   - available: the free space usable by this process, in bytes.
    ///   - margin: bytes to keep free beyond the download itself; a negative margin counts as zero.
    /// - Returns: `.unknown` without a length, `.tooSmall` when `needed + margin > available`,
    ///   otherwise `.fits`. The sum saturates instead of overflowing.
    package static func verdict(bytesStillNeeded: Int64?, available: Int64, margin: Int64) -> SpaceVerdict {
        guard let bytesStillNeeded else { return .unknown }
        let (sum, overflow) = max(0, bytesStillNeeded).addingReportingOverflow(max(0, margin))
        let needed = overflow ? Int64.max : sum
        return needed > available ? .tooSmall(needed: needed, available: available) : .fits
    }
}
