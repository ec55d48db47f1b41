import Foundation

/// Absolute, normalized paths without touching the file system (Foundation's file URLs stat the
/// path and read the working directory on every call, which a batch of thousands feels).
public enum AbsolutePath {
    /// The process's working directory, read once.
    static let workingDirectory: String = FileManager.default.currentDirectoryPath

    /// The directory part of `path`, split at the last "/" byte. (NSString's
    /// `deletingLastPathComponent` works on Characters, and a name starting with a combining mark
    /// fuses with the "/" before it, so it would name the wrong directory.)
    public static func directory(of path: String) -> String {
        let bytes = Array(path.utf8)
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return "." }
        if slash == 0 { return "/" }
        return String(decoding: bytes[..<slash], as: UTF8.self)
    }

    /// `path` made absolute against the working directory, with `.`, `..` and repeated slashes resolved.
    public static func of(_ path: String) -> String {
        let joined = path.hasPrefix("/") ? path : workingDirectory + "/" + path
        var parts: [Substring] = []
        for part in joined.split(separator: "/", omittingEmptySubsequences: true) {
            switch part {
            case ".": continue
            case "..": if !parts.isEmpty { parts.removeLast() }
            default: parts.append(part)
            }
        }
        return "/" + parts.joined(separator: "/")
    }
}
