import Foundation

/// Absolute, normalized paths without touching the file system (Foundation's file URLs stat the
/// path and read the working directory on every call, which a batch of thousands feels).
package enum AbsolutePath {
    /// The process's working directory, read once.
    static let workingDirectory: String = FileManager.default.currentDirectoryPath

    /// The directory part of `path`, split at the last "/" byte. (NSString's
    /// `deletingLastPathComponent` works on Characters, and a name starting with a combining mark
    /// fuses with the "/" before it, so it would name the wrong directory.)
    package static func directory(of path: String) -> String {
        let bytes = Array(path.utf8)
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return "." }
        if slash == 0 { return "/" }
        return String(decoding: bytes[..<slash], as: UTF8.self)
    }

    /// The directory `path`'s last name is in, as NSString's `deletingLastPathComponent` gives it
    /// for a path with single slashes: trailing slashes and those before the last name dropped
    /// ("/a" for "/a//b/", "/" for "/a" and "/", "" for "a" and ""). By bytes: Foundation's own
    /// traps on some paths with repeated slashes ("/a//é") on Linux.
    package static func parent(of path: String) -> String {
        let slash = UInt8(ascii: "/")
        let bytes = Array(path.utf8)
        var end = bytes.count
        while end > 0, bytes[end - 1] == slash { end -= 1 }
        if end == 0 { return bytes.isEmpty ? "" : "/" }
        while end > 0, bytes[end - 1] != slash { end -= 1 }
        while end > 1, bytes[end - 1] == slash { end -= 1 }
        return String(decoding: bytes[..<end], as: UTF8.self)
    }

    /// The last component of `path`, split at "/" bytes after any trailing ones: "b" for "/a/b"
    /// and "/a/b/", "/" for "/", "" for "" and "//". NSString's `lastPathComponent` gives the same for a
    /// path whose names start with no combining mark, at dozens of times the cost (it normalizes
    /// the whole path first, Character by Character).
    package static func name(of path: String) -> String {
        let slash = UInt8(ascii: "/")
        let bytes = path.utf8
        var end = bytes.endIndex
        while end > bytes.startIndex, bytes[bytes.index(before: end)] == slash { end = bytes.index(before: end) }
        if end == bytes.startIndex { return path == "/" ? "/" : "" }  // "//" is "", as Foundation has it
        var start = end
        while start > bytes.startIndex, bytes[bytes.index(before: start)] != slash { start = bytes.index(before: start) }
        return String(path[start..<end])
    }

    /// `name` (one component: no "/") appended to `directory`, as NSString's
    /// `appendingPathComponent` does; a directory that needs its slashes tidied first (repeated,
    /// trailing) goes through NSString, the rest by copying bytes once (a String `+` checks the
    /// seam for a grapheme cluster, and NSString normalizes the whole path).
    package static func joining(_ directory: String, _ name: String) -> String {
        let slash = UInt8(ascii: "/")
        var directory = directory
        var name = name
        return directory.withUTF8 { head in
            name.withUTF8 { tail in
                let root = head.count == 1 && head.first == slash
                var previous: UInt8 = 0
                var tidy = !head.isEmpty && !tail.isEmpty && (root || head.last != slash) && !tail.contains(slash)
                for byte in head where tidy {
                    if byte == slash && previous == slash { tidy = false }
                    previous = byte
                }
                guard tidy else {
                    return (String(decoding: head, as: UTF8.self) as NSString).appendingPathComponent(String(decoding: tail, as: UTF8.self))
                }
                let separator = root ? 0 : 1
                return String(unsafeUninitializedCapacity: head.count + separator + tail.count) { buffer in
                    _ = buffer.initialize(fromContentsOf: head)
                    if separator == 1 { buffer[head.count] = slash }
                    _ = buffer[(head.count + separator)...].initialize(fromContentsOf: tail)
                    return head.count + separator + tail.count
                }
            }
        }
    }

    /// `path` made absolute against the working directory, with `.`, `..` and repeated slashes
    /// resolved. Components are split at "/" bytes and compared byte for byte, as the kernel
    /// reads a path: a component starting with a combining mark is not fused with the "/" before
    /// it (which `split` over Characters would do), and the work is one pass over the bytes.
    package static func of(_ path: String) -> String {
        let joined = path.utf8.first == UInt8(ascii: "/") ? path : workingDirectory + "/" + path
        let slash = UInt8(ascii: "/")
        let dot = UInt8(ascii: ".")
        var bytes = Array(joined.utf8)
        // Components kept so far, as the start offset of each in `bytes` (written in place: the
        // result is never longer than the input).
        var starts: [Int] = []
        var written = 0
        var index = 0
        while index < bytes.count {
            while index < bytes.count, bytes[index] == slash { index += 1 }
            let start = index
            while index < bytes.count, bytes[index] != slash { index += 1 }
            let length = index - start
            if length == 0 || (length == 1 && bytes[start] == dot) { continue }
            if length == 2, bytes[start] == dot, bytes[start + 1] == dot {
                if let last = starts.popLast() { written = last - 1 }
                continue
            }
            bytes[written] = slash
            starts.append(written + 1)
            for offset in 0..<length { bytes[written + 1 + offset] = bytes[start + offset] }
            written += 1 + length
        }
        if written == 0 { return "/" }
        return String(decoding: bytes[..<written], as: UTF8.self)
    }
}
