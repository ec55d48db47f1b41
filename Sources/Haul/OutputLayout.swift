import Foundation
import HaulCore

/// Where a download's files live on disk: the final path (when known), the partial file and its record.
struct OutputLayout: Sendable, Equatable {
    /// Suffixes of the files kept beside the destination while a download is incomplete.
    static let partialSuffix = ".haul-partial"
    static let recordSuffix = ".haul-resume"
    static let lockSuffix = ".haul-lock"

    /// The directory everything lives in.
    let directory: String
    /// The final path; nil for a download into a directory until the response names the file.
    var finalPath: String?
    let partialPath: String
    let recordPath: String
    /// A segmented download's progress, mapped into memory (see `SegmentProgressMap`).
    var segmentMapPath: String {
        String(partialPath.dropLast(Self.partialSuffix.count)) + ".haul-segments"
    }
    /// Where a partial proven bad (its digest is not the expected one) is set aside: kept for a
    /// look, never continued.
    var rejectedPath: String {
        String(partialPath.dropLast(Self.partialSuffix.count)) + ".haul-rejected"
    }
    /// The lock that gives one run at a time the right to write the partial.
    var lockPath: String {
        String(partialPath.dropLast(Self.partialSuffix.count)) + Self.lockSuffix
    }

    /// The one rule for where a download's files live, for the runner and the queue alike; nil for
    /// standard output. `--continue` into a directory needs the name before any request, so it
    /// takes it from the URL (as wget -c does) and lives beside that file.
    static func of(_ request: DownloadRequest) -> OutputLayout? {
        switch request.destination {
        case .standardOutput:
            return nil
        case .file(let path):
            return .file(path)
        case .directory(let directory) where request.existingFile == .continueIt:
            let name = FileNameSanitizer.destinationName(contentDisposition: nil, url: request.url)
            return .file((directory as NSString).appendingPathComponent(name))
        case .directory(let directory):
            return .directory(directory, url: request.url)
        }
    }

    /// A download to an explicit path: the partial and record sit beside it.
    static func file(_ path: String) -> OutputLayout {
        let directory = AbsolutePath.directory(of: path)
        return OutputLayout(
            directory: directory,
            finalPath: path,
            partialPath: path + partialSuffix,
            recordPath: path + recordSuffix)
    }

    /// A download into a directory: the name is not known before the response, so the partial is
    /// keyed by the URL, which is what a later run for the same URL knows first.
    static func directory(_ directory: String, url: URL) -> OutputLayout {
        let key = "." + "haul-" + stableHash(url.absoluteString)
        let base = (directory as NSString).appendingPathComponent(key)
        return OutputLayout(directory: directory, finalPath: nil, partialPath: base + partialSuffix, recordPath: base + recordSuffix)
    }

    /// The path for a file name chosen from a response. The name was sanitized; this checks again,
    /// byte by byte, that it is one plain component, so nothing can ever leave `directory`.
    func path(forName name: String) -> String {
        let plain = !name.isEmpty && name != "." && name != ".." && !name.utf8.contains(UInt8(ascii: "/")) && !name.utf8.contains(0)
        return (directory as NSString).appendingPathComponent(plain ? name : "download")
    }

    /// FNV-1a, 64 bits, as 16 hex digits: stable across runs and platforms (unlike `hashValue`).
    static func stableHash(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
