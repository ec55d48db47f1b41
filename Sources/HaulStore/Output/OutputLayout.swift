import Foundation
import HaulCore

/// Where a download's files live on disk: the final path (when known), the partial file and its record.
public struct OutputLayout: Sendable, Equatable {
    /// Suffixes of the files kept beside the destination while a download is incomplete.
    public static let partialSuffix = ".haul-partial"
    public static let recordSuffix = ".haul-resume"
    public static let lockSuffix = ".haul-lock"

    /// The directory everything lives in.
    public let directory: String
    /// The final path given up front; nil for a download into a directory (the response names
    /// the file: `PartialDownload.finalPath` is the one place that derives it).
    public let finalPath: String?
    /// The partial file.
    public let partialPath: String
    /// The resume record beside it (a single download's; a queue keeps its record in the store).
    public let recordPath: String
    /// A segmented download's progress, mapped into memory (see `SegmentProgressMap`).
    public var segmentMapPath: String {
        String(partialPath.dropLast(Self.partialSuffix.count)) + ".haul-segments"
    }
    /// Where a partial proven bad (its digest is not the expected one) is set aside: kept for a
    /// look, never continued.
    public var rejectedPath: String {
        String(partialPath.dropLast(Self.partialSuffix.count)) + ".haul-rejected"
    }
    /// The directory's lock file, in which one byte per destination gives one run at a time the
    /// right to write the partial (see `DestinationLock`).
    public var lockPath: String {
        directory + "/" + Self.lockSuffix
    }

    /// The one rule for where a download's files live, for the runner and the queue alike; nil for
    /// standard output. Continuing (`existingFile: .continueIt`) into a directory needs the name
    /// before any request, so it takes it from the URL (as wget -c does) and lives beside that file.
    public static func of(_ destination: Destination, existingFile: ExistingFilePolicy, url: URL) -> OutputLayout? {
        switch destination {
        case .standardOutput:
            return nil
        case .file(let path):
            return .file(path)
        case .directory(let directory) where existingFile == .continueIt:
            let name = FileNameSanitizer.destinationName(contentDisposition: nil, url: url)
            return .file((directory as NSString).appendingPathComponent(name))
        case .directory(let directory):
            return .directory(directory, url: url)
        }
    }

    /// A download to an explicit path: the partial and record sit beside it.
    public static func file(_ path: String) -> OutputLayout {
        let directory = AbsolutePath.directory(of: path)
        return OutputLayout(
            directory: directory,
            finalPath: path,
            partialPath: path + partialSuffix,
            recordPath: path + recordSuffix)
    }

    /// A download into a directory: the name is not known before the response, so the partial is
    /// keyed by the URL, which is what a later run for the same URL knows first.
    public static func directory(_ directory: String, url: URL) -> OutputLayout {
        let key = "." + "haul-" + stableHash(url.absoluteString)
        let base = (directory as NSString).appendingPathComponent(key)
        return OutputLayout(directory: directory, finalPath: nil, partialPath: base + partialSuffix, recordPath: base + recordSuffix)
    }

    /// The final path: the one given up front, else the file a response named (`fileName`, as
    /// the record keeps it); nil while neither is known.
    public func finalPath(named fileName: String?) -> String? {
        finalPath ?? fileName.map(path(forName:))
    }

    /// The path for a file name chosen from a response. The name was sanitized; this checks again,
    /// byte by byte, that it is one plain component, so nothing can ever leave `directory`.
    public func path(forName name: String) -> String {
        let plain = !name.isEmpty && name != "." && name != ".." && !name.utf8.contains(UInt8(ascii: "/")) && !name.utf8.contains(0)
        return (directory as NSString).appendingPathComponent(plain ? name : "download")
    }

    /// FNV-1a, 64 bits, as 16 hex digits: stable across runs and platforms (unlike `hashValue`).
    public static func stableHash(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
