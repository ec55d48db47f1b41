import Foundation

/// Absolute, normalized paths without touching the file system (Foundation's file URLs stat the
/// path and read the working directory on every call, which a batch of thousands feels).
public enum AbsolutePath {
    /// The process's working directory, read once.
    static let workingDirectory: String = FileManager.default.currentDirectoryPath

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
