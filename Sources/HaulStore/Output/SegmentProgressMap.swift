import Foundation
import HaulCore

/// A segmented download's progress in a small file mapped into memory (`MAP_SHARED`), updated
/// after every write: the kernel keeps its pages after the process dies, so a run after `kill -9`
/// (in the same boot) knows every byte the connections wrote, not only what the last checkpoint
/// recorded. Like the data it describes, it is trusted only within the boot that wrote it; the
/// durable record (synced every second) covers a reboot.
///
/// Layout, native 64-bit words: magic, generation (odd while the table is rewritten), the
/// sequential prefix, the segment count, then `begin, next, end` per segment. A `next` or the
/// prefix is one aligned word, so a crash leaves the old value or the new one; a table rewrite
/// (a split or a steal) is bracketed by the generation and a torn one is ignored.
/// `@unchecked Sendable`: every update comes from the segment coordinator under its lock.
package final class SegmentProgressMap: @unchecked Sendable {
    static let magic: Int64 = 0x4841_554C_5345_4731  // "HAULSEG1"
    static let headerWords = 4
    package let path: String
    private let fd: Int32
    private var base: UnsafeMutablePointer<Int64>
    private var capacity: Int

    /// Creates (or reuses) the map at `path` for `segments`, starting from `prefix`.
    package init(path: String, prefix: Int64, segments: [Segment]) throws(StoreError) {
        let fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StoreError.system("cannot open the segment map", path: path) }
        let capacity = max(256, segments.count * 2)
        let base: UnsafeMutablePointer<Int64>
        do {
            base = try Self.map(fd, capacity: capacity, path: path)
        } catch {
            close(fd)
            throw error
        }
        self.path = path
        self.fd = fd
        self.base = base
        self.capacity = capacity
        store(prefix: prefix, segments: segments)
    }

    deinit {
        munmap(base, Self.bytes(capacity))
        close(fd)
    }

    private static func bytes(_ capacity: Int) -> Int {
        (headerWords + 3 * capacity) * MemoryLayout<Int64>.size
    }

    /// Sizes the file for `capacity` segments and maps it shared.
    private static func map(_ fd: Int32, capacity: Int, path: String) throws(StoreError) -> UnsafeMutablePointer<Int64> {
        guard ftruncate(fd, off_t(bytes(capacity))) == 0 else {
            throw StoreError.system("cannot size the segment map", path: path)
        }
        let mapped = mmap(nil, bytes(capacity), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
        guard let mapped, mapped != MAP_FAILED else { throw StoreError.system("cannot map the segment map", path: path) }
        return mapped.bindMemory(to: Int64.self, capacity: headerWords + 3 * capacity)
    }

    private func grow(to newCapacity: Int) throws(StoreError) {
        let mapped = try Self.map(fd, capacity: newCapacity, path: path)
        munmap(base, Self.bytes(capacity))
        base = mapped
        capacity = newCapacity
    }

    /// Rewrites the whole table (after a split or a steal).
    package func store(prefix: Int64, segments: [Segment]) {
        if segments.count > capacity {
            // Growing fails only without memory or disk; the table then stays the last one
            // stored, marked torn, and the durable record is what a later run trusts.
            do {
                try grow(to: segments.count * 2)
            } catch {
                base[1] = 1
                return
            }
        }
        base[0] = Self.magic
        base[1] = base[1] | 1
        base[2] = prefix
        for (index, segment) in segments.enumerated() {
            base[Self.headerWords + 3 * index] = segment.begin
            base[Self.headerWords + 3 * index + 1] = segment.next
            base[Self.headerWords + 3 * index + 2] = segment.end
        }
        base[3] = Int64(segments.count)
        base[1] = base[1] + 1
    }

    /// Segment `index` has its bytes on disk up to `next`.
    package func advance(_ index: Int, to next: Int64) {
        guard index < capacity else { return }
        base[Self.headerWords + 3 * index + 1] = next
    }

    /// The sequential prefix has its bytes on disk up to `prefix`.
    package func setPrefix(_ prefix: Int64) {
        base[2] = prefix
    }

    /// Unmaps nothing (deinit does) but removes the file: its download no longer has segments.
    package func remove() {
        unlink(path)
    }

    /// The progress a map at `path` holds, nil when there is none or it cannot be trusted
    /// (another format, a torn rewrite, impossible values).
    package static func read(path: String) -> (prefix: Int64, segments: [Segment])? {
        guard let data = FileManager.default.contents(atPath: path), data.count >= bytes(0) else { return nil }
        let words: [Int64] = data.withUnsafeBytes { raw in
            Array(raw.bindMemory(to: Int64.self).prefix(data.count / MemoryLayout<Int64>.size))
        }
        guard words[0] == magic, words[1] & 1 == 0, words[3] >= 0 else { return nil }
        let count = Int(words[3])
        guard headerWords + 3 * count <= words.count else { return nil }
        var segments: [Segment] = []
        for index in 0..<count {
            let begin = words[headerWords + 3 * index]
            let next = words[headerWords + 3 * index + 1]
            let end = words[headerWords + 3 * index + 2]
            guard begin >= 0, begin <= next, next <= end else { return nil }
            segments.append(Segment(begin: begin, next: next, end: end))
        }
        return (words[2], segments)
    }
}
