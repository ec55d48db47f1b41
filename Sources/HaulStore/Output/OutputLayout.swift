import Foundation
import HaulCore

/// Where a download's files live on disk: the final path (when known), the partial file and the
/// other sidecars beside it (each named by `SidecarName`, the one rule for their names).
package struct OutputLayout: Sendable, Equatable {
    /// The name of the directory's lock file (see `lockPath`).
    package static let lockSuffix = ".haul-lock"

    /// The directory everything lives in.
    package let directory: String
    /// The final path given up front; nil for a download into a directory (the response names
    /// the file: `PartialDownload.finalPath` is the one place that derives it).
    package let finalPath: String?
    /// For a download into a directory, the name its URL alone gives the file (`nameFromURL`):
    /// where it lands unless the response names it otherwise, and so where an earlier run of the
    /// same request put it. Nil for a path given up front.
    package let urlName: String?
    /// The longest name, in bytes, the directory's file system takes (`nameLimit(of:)`).
    package let nameMax: Int
    /// The sidecars' path up to their name (through the last "/"), and the name they are named
    /// after: the final name, or a directory download's key.
    private let sidecarPrefix: String
    private let sidecarStem: String

    /// The partial file.
    package var partialPath: String { path(of: .partial) }
    /// The resume record beside it (a single download's; a queue keeps its record in the store).
    package var recordPath: String { path(of: .record) }
    /// A segmented download's progress, mapped into memory (see `SegmentProgressMap`).
    package var segmentMapPath: String { path(of: .segmentMap) }
    /// Where a partial proven bad (its digest is not the expected one) is set aside: kept for a
    /// look, never continued.
    package var rejectedPath: String { path(of: .rejected) }
    /// The directory's lock file, in which one byte per destination gives one run at a time the
    /// right to write the partial (see `DestinationLock`).
    package var lockPath: String {
        directory + "/" + Self.lockSuffix
    }

    /// The path of `sidecar`: beside the destination, named by `SidecarName`.
    package func path(of sidecar: Sidecar) -> String {
        sidecarPrefix + SidecarName.of(sidecarStem, sidecar, nameMax: nameMax)
    }

    /// The final name given up front when the file system cannot take it (longer than
    /// `nameMax` bytes): such a download is refused before any request. Nil when it fits.
    package var finalNameTooLong: String? {
        guard finalPath != nil, sidecarStem.utf8.count > nameMax else { return nil }
        return sidecarStem
    }

    private init(directory: String, finalPath: String?, sidecarBase: String, nameMax: Int, urlName: String? = nil) {
        self.directory = directory
        self.finalPath = finalPath
        self.urlName = urlName
        self.nameMax = nameMax
        // Split at the last "/" byte, as the kernel reads a path (see `AbsolutePath.directory`).
        let bytes = Array(sidecarBase.utf8)
        let cut = bytes.lastIndex(of: UInt8(ascii: "/")).map { $0 + 1 } ?? 0
        sidecarPrefix = String(decoding: bytes[..<cut], as: UTF8.self)
        sidecarStem = String(decoding: bytes[cut...], as: UTF8.self)
    }

    /// The one rule for where a download's files live, for the runner and the queue alike; nil for
    /// standard output. Continuing (`existingFile: .continueIt`) into a directory needs the name
    /// before any request, so it takes it from the URL (as wget -c does) and lives beside that file.
    package static func of(_ destination: Destination, existingFile: ExistingFilePolicy, url: URL) -> OutputLayout? {
        switch destination {
        case .standardOutput:
            return nil
        case .file(let path):
            return .file(path)
        case .directory(let directory) where existingFile == .continueIt:
            return .file(AbsolutePath.joining(directory, nameFromURL(url)))
        case .directory(let directory):
            return .directory(directory, url: url)
        }
    }

    /// A download to an explicit path: the partial and record sit beside it. `nameMax`: the
    /// directory's name limit, asked of its file system when not given.
    package static func file(_ path: String, nameMax: Int? = nil) -> OutputLayout {
        let directory = AbsolutePath.directory(of: path)
        return OutputLayout(directory: directory, finalPath: path, sidecarBase: path, nameMax: nameMax ?? nameLimit(of: directory))
    }

    /// A download into a directory: the name is not known before the response, so the partial is
    /// keyed by the URL, which is what a later run for the same URL knows first.
    package static func directory(_ directory: String, url: URL, nameMax: Int? = nil) -> OutputLayout {
        let key = "." + "haul-" + stableHash(url.absoluteString)
        let base = AbsolutePath.joining(directory, key)
        return OutputLayout(
            directory: directory, finalPath: nil, sidecarBase: base, nameMax: nameMax ?? nameLimit(of: directory), urlName: nameFromURL(url))
    }

    /// The name a URL alone gives a file downloaded into a directory (its last path segment,
    /// sanitized): the one rule for a directory download's name before any response.
    package static func nameFromURL(_ url: URL) -> String {
        FileNameSanitizer.destinationName(contentDisposition: nil, url: url)
    }

    /// The path the URL alone names in a directory download (`urlName`); nil for a path given up front.
    package var finalPathFromURL: String? {
        urlName.map(path(forName:))
    }

    /// The longest name, in bytes, the file system of `directory` takes: `pathconf(_PC_NAME_MAX)`
    /// of the directory, or of its nearest existing parent while it does not exist yet (it will be
    /// made on that file system); never above 255 (Linux's limit, and
    /// `FileNameSanitizer.maximumByteCount`), and 255 when the file system does not say.
    package static func nameLimit(of directory: String) -> Int {
        let fallback = FileNameSanitizer.maximumByteCount
        var candidate = directory.isEmpty ? "." : directory
        while true {
            errno = 0
            let limit = pathconf(candidate, Int32(_PC_NAME_MAX))
            if limit > 0 { return min(limit, fallback) }
            // ENOENT/ENOTDIR: not there yet, ask its parent; anything else (or no limit): 255.
            guard limit < 0, errno == ENOENT || errno == ENOTDIR else { return fallback }
            let parent = AbsolutePath.directory(of: candidate)
            guard parent != candidate else { return fallback }
            candidate = parent
        }
    }

    /// The final path: the one given up front, else the file a response named (`fileName`, as
    /// the record keeps it); nil while neither is known.
    package func finalPath(named fileName: String?) -> String? {
        finalPath ?? fileName.map(path(forName:))
    }

    /// The path for a file name chosen from a response. The name was sanitized; this checks again,
    /// byte by byte, that it is one plain component, so nothing can ever leave `directory`.
    package func path(forName name: String) -> String {
        var bytes = name
        let plain = !name.isEmpty && name != "." && name != ".." && !bytes.withUTF8 { $0.contains { $0 == UInt8(ascii: "/") || $0 == 0 } }
        return AbsolutePath.joining(directory, plain ? name : "download")
    }

    /// FNV-1a, 64 bits, as 16 hex digits: stable across runs and platforms (unlike `hashValue`).
    package static func stableHash(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
