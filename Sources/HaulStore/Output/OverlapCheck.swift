import Foundation

/// How bytes a server sent compare with the bytes on disk at the same offset: the one check of an
/// overlap, for a response that resumes a partial and for a mirror's probe alike.
package enum OverlapCheck: Equatable, Sendable {
    /// Every byte is the same.
    case matches
    /// The first byte that differs, as an offset in the file.
    case differs(at: Int64)
    /// The file ends before the bytes do.
    case fileEnds
}

extension PartialFile {
    /// Compares `bytes` with the file's bytes at `offset`.
    package func compare(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(StoreError) -> OverlapCheck {
        let onDisk = try read(at: offset, count: bytes.count)
        guard onDisk.count == bytes.count else { return .fileEnds }
        let equal = onDisk.withUnsafeBytes { disk in
            guard let left = disk.baseAddress, let right = bytes.baseAddress else { return true }
            return memcmp(left, right, bytes.count) == 0
        }
        if equal { return .matches }
        for position in 0..<bytes.count where bytes[position] != onDisk[position] {
            return .differs(at: offset + Int64(position))
        }
        return .matches
    }
}
