import Foundation
import HaulCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Paths compared as the file system sees them: every symlink of the part that exists resolved.
/// A path a client names may not exist yet (the download creates its directories), so the longest
/// prefix that exists is resolved and the rest appended (a component that does not exist cannot be
/// a symlink).
enum ConfinedPath {
    /// `path` (absolute, without `.` or `..` components) with the symlinks of its existing prefix
    /// resolved; "" (inside nothing) when a component exists but cannot be resolved.
    static func resolved(_ path: String) -> String {
        var existing = path
        var rest: [String] = []
        while true {
            if let real = realPath(existing) {
                return rest.isEmpty ? real : (real.hasSuffix("/") ? real : real + "/") + rest.reversed().joined(separator: "/")
            }
            // There but unresolvable (a symlink to nowhere, a loop): it leads nowhere inside.
            var status = stat()
            if lstat(existing, &status) == 0 { return "" }
            let parent = AbsolutePath.parent(of: existing)
            guard parent != existing, !parent.isEmpty else { return path }
            rest.append(AbsolutePath.name(of: existing))
            existing = parent
        }
    }

    /// `path` relative to `root` ("" for the root itself), or nil when it is not inside it.
    /// Compared byte by byte, as the kernel compares names: Swift's `==` and `hasPrefix` take
    /// canonically equivalent strings as equal, and "é" (NFC) and "e" + U+0301 (NFD) are two
    /// different directories on Linux, so a root's Unicode twin beside it is not inside it.
    static func relative(_ path: String, within root: String) -> String? {
        let pathBytes = Array(path.utf8)
        var prefix = Array(root.utf8)
        if pathBytes == prefix { return "" }
        if prefix.last != UInt8(ascii: "/") { prefix.append(UInt8(ascii: "/")) }
        guard pathBytes.starts(with: prefix) else { return nil }
        return String(decoding: pathBytes[prefix.count...], as: UTF8.self)
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
