import CHaulSystem
import Foundation
import HaulChecksum
import HaulCore

/// The proof, kept on a finished file itself, that Haul put it in place as the complete download
/// of one request: an extended attribute (`user.haul.finished`) naming the request (a SHA-256 of
/// its URL, method and range, so no secret of the URL is kept) and the file's identity when it was
/// finished (device, inode, size, modification time).
///
/// Kept on the file, not in a record beside it: nothing is left next to a finished download, a
/// file that is removed takes its proof with it, and a file put at the path by anything else (a
/// copy, a rename over it, another program's download) has another inode and proves nothing. A
/// file changed in place has another size or modification time and proves nothing either. The
/// mark is set before the data sync that precedes the rename, which makes it durable with the
/// file's metadata (`GroupSync`); where the file system keeps no extended attributes, nothing is
/// marked and the same request again is refused as any file in the way.
struct FinishedMark: Equatable {
    static let attributeName = "user.haul.finished"
    private static let format = "haul-finished-1"

    /// The request the file is the finished download of (`requestKey`).
    var request: String
    /// Which file it was when it was marked.
    var identity: FileIdentity

    /// What names a request for the mark: SHA-256 of its method, range and URL, in hex.
    static func requestKey(of record: ResumeRecord) -> String {
        let hash = StreamingHash(.sha256)
        let text = [record.method, record.range ?? "", record.originalURL].joined(separator: "\n")
        Array(text.utf8).withUnsafeBytes { hash.update($0) }
        return hash.finalizeHex()
    }

    /// The attribute's text.
    var encoded: String {
        let parts: [String] = [
            Self.format, request, String(identity.device), String(identity.inode), String(identity.size), String(identity.modifiedSeconds),
            String(identity.modifiedNanoseconds),
        ]
        return parts.joined(separator: " ")
    }

    /// The mark in `text`; nil for anything else (another format, damaged, planted).
    init?(decoding text: String) {
        let parts = text.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 7, parts[0] == Self.format, parts[1].utf8.count == 64, parts[1].utf8.allSatisfy(\.isHexDigit),
            let device = UInt64(parts[2]), let inode = UInt64(parts[3]), let size = Int64(parts[4]), let seconds = Int64(parts[5]),
            let nanoseconds = Int64(parts[6])
        else { return nil }
        var info = stat()
        info.st_dev = .init(truncatingIfNeeded: device)
        info.st_ino = .init(truncatingIfNeeded: inode)
        info.st_size = .init(truncatingIfNeeded: size)
        var identity = FileIdentity(info)
        identity.modifiedSeconds = seconds
        identity.modifiedNanoseconds = nanoseconds
        self.init(request: parts[1], identity: identity)
    }

    init(request: String, identity: FileIdentity) {
        self.request = request
        self.identity = identity
    }

    /// Marks the file open as `fd`, as it is now, as the finished download of `request`. False
    /// where the file system keeps no extended attributes (or refuses this one).
    static func mark(_ fd: Int32, request: String) -> Bool {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return false }
        let text = FinishedMark(request: request, identity: FileIdentity(info)).encoded
        return Array(text.utf8).withUnsafeBytes { bytes in
            haul_set_file_attribute(fd, attributeName, bytes.baseAddress, bytes.count) == 0
        }
    }

    /// The identity of the regular file at `path` when its mark proves it the finished download of
    /// `request`, unchanged since; nil otherwise (no file, a symlink, no mark, another request's,
    /// another inode, another size or modification time).
    static func provenFinished(at path: String, request: String) -> FileIdentity? {
        guard let (mark, current) = read(at: path) else { return nil }
        return mark.request == request && mark.identity == current ? current : nil
    }

    /// The request whose finished download the regular file at `path` is, unchanged since its
    /// mark (whichever request that is); nil for no such file.
    static func finishedRequest(at path: String) -> String? {
        guard let (mark, current) = read(at: path), mark.identity == current else { return nil }
        return mark.request
    }

    /// The mark on the regular file at `path` (never through a symlink) and the file's identity now.
    private static func read(at path: String) -> (FinishedMark, FileIdentity)? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        var buffer = [UInt8](repeating: 0, count: 256)
        let length = buffer.withUnsafeMutableBytes { haul_get_file_attribute(fd, attributeName, $0.baseAddress, $0.count) }
        guard length > 0, let mark = FinishedMark(decoding: String(decoding: buffer.prefix(length), as: UTF8.self)) else { return nil }
        return (mark, FileIdentity(info))
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
    }
}
