import CHaulSystem
import Foundation
import HaulChecksum
import HaulCore

/// The proof, kept on a finished file itself, that Haul put it in place as the complete download
/// of one request: an extended attribute (`user.haul.finished`) naming the request (a SHA-256 of
/// its URL, method and range, so no secret of the URL is kept) and the file's identity when it was
/// finished (device, inode, size, modification time), and a time its change time (ctime) cannot
/// have passed since.
///
/// Kept on the file, not in a record beside it: nothing is left next to a finished download, a
/// file that is removed takes its proof with it, and a file put at the path by anything else (a
/// copy, a rename over it, another program's download) has another inode and proves nothing. A
/// file changed in place has another size or modification time, or, when those were put back
/// (`touch -r`, `rsync --inplace -t`), a later change time, and proves nothing either: no program
/// can set a file's change time, and every write, `utimensat`, `chmod` or link moves it. The
/// mark is set once, after the rename (which moves the change time, so a mark set before it
/// would prove nothing after), if the file is still exactly the one whose data was synced, and
/// before the directory's sync, which commits it with the rename where the file system journals
/// in order (ext4, XFS). A process killed before the mark, or a mark the crash lost, leaves a
/// file no mark proves: its record, until it is forgotten after the directory's sync, still says
/// it is finished, and the next run that takes the file by it (unchanged since its rename) marks
/// it then; a file no record or mark proves is refused as any file in the way: never a wrong
/// proof. Where the file system
/// keeps no extended attributes, nothing is marked and the same request again is refused as any
/// file in the way.
struct FinishedMark: Equatable {
    static let attributeName = "user.haul.finished"
    private static let format = "haul-finished-2"
    /// How far ahead of the clock a mark puts its bound on the change time (0.2 ms): the attribute
    /// being set moves the change time, after the bound was written into it (a thread held up
    /// longer tries again). A change made within it of the mark is the one a mark cannot see;
    /// where the kernel keeps change times to its tick (before Linux 6.13's fine-grained ones for a
    /// file whose change time was read, as the mark's does), within that tick.
    static let changeTimeAllowance: Int64 = 200_000

    /// The request the file is the finished download of (`requestKey`).
    var request: String
    /// Which file it was when it was marked.
    var identity: FileIdentity
    /// The latest change time (ctime, nanoseconds since 1970) the marked file can have: setting
    /// the mark is its last change.
    var changedNoLaterThan: Int64

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
            String(identity.modifiedNanoseconds), String(changedNoLaterThan),
        ]
        return parts.joined(separator: " ")
    }

    /// The mark in `text`; nil for anything else (another format, damaged, planted).
    init?(decoding text: String) {
        let parts = text.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 8, parts[0] == Self.format, parts[1].utf8.count == 64, parts[1].utf8.allSatisfy(\.isHexDigit),
            let device = UInt64(parts[2]), let inode = UInt64(parts[3]), let size = Int64(parts[4]), let seconds = Int64(parts[5]),
            let nanoseconds = Int64(parts[6]), let changed = Int64(parts[7])
        else { return nil }
        var info = stat()
        info.st_dev = .init(truncatingIfNeeded: device)
        info.st_ino = .init(truncatingIfNeeded: inode)
        info.st_size = .init(truncatingIfNeeded: size)
        var identity = FileIdentity(info)
        identity.modifiedSeconds = seconds
        identity.modifiedNanoseconds = nanoseconds
        self.init(request: parts[1], identity: identity, changedNoLaterThan: changed)
    }

    init(request: String, identity: FileIdentity, changedNoLaterThan: Int64) {
        self.request = request
        self.identity = identity
        self.changedNoLaterThan = changedNoLaterThan
    }

    /// Marks the file open as `fd`, as it is now, as the finished download of `request`; returns
    /// the identity marked. `expecting`: the identity an earlier mark gave it (the mark set again
    /// after the rename): a file that is not exactly that any more (another program wrote into it
    /// meanwhile) loses its mark instead. Nil where the file system keeps no extended attributes
    /// (or refuses this one), or where the change time the mark itself gave the file passed its
    /// bound each time (a thread held up between the clock and the attribute): such a file proves
    /// nothing, and is refused as any file in the way. `changedAt`: the change time the file must
    /// still have when it is first looked at (a file written into with its size and modification
    /// time put back keeps its identity, never its change time), else it is not marked.
    @discardableResult
    static func mark(_ fd: Int32, request: String, expecting: FileIdentity? = nil, changedAt: Int64? = nil) -> FileIdentity? {
        for attempt in 0..<3 {
            var info = stat()
            guard fstat(fd, &info) == 0 else { return nil }
            let identity = FileIdentity(info)
            if let expecting, identity != expecting {
                _ = haul_remove_file_attribute(fd, attributeName)
                return nil
            }
            // (Only before this sets the attribute: setting it moves the change time.)
            if attempt == 0, let changedAt, changeTime(info) != changedAt { return nil }
            let bound = wallClockNanoseconds + changeTimeAllowance
            let text = FinishedMark(request: request, identity: identity, changedNoLaterThan: bound).encoded
            let set = Array(text.utf8).withUnsafeBytes { bytes in
                haul_set_file_attribute(fd, attributeName, bytes.baseAddress, bytes.count) == 0
            }
            guard set, fstat(fd, &info) == 0 else { return nil }
            if changeTime(info) <= bound { return identity }
        }
        return nil
    }

    /// The wall clock in nanoseconds since 1970: the clock a file's change time is taken from.
    private static var wallClockNanoseconds: Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    /// The file's change time (ctime) in nanoseconds since 1970.
    static func changeTime(_ info: stat) -> Int64 {
        Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
    }

    /// The identity of the regular file at `path` when its mark proves it the finished download of
    /// `request`, unchanged since; nil otherwise (no file, a symlink, no mark, another request's,
    /// another inode, another size or modification time, changed after it was marked).
    static func provenFinished(at path: String, request: String) -> FileIdentity? {
        guard let unchanged = unchangedSinceMarked(at: path), unchanged.request == request else { return nil }
        return unchanged.identity
    }

    /// The request whose finished download the regular file at `path` is, unchanged since its
    /// mark (whichever request that is); nil for no such file.
    static func finishedRequest(at path: String) -> String? {
        unchangedSinceMarked(at: path)?.request
    }

    /// The request the mark on the regular file at `path` names (never through a symlink), and the
    /// file's identity, when the file is unchanged since it was marked (the same identity, its
    /// change time within the mark's bound); nil otherwise.
    private static func unchangedSinceMarked(at path: String) -> (request: String, identity: FileIdentity)? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return unchangedSinceMarked(fd)
    }

    /// The request the mark on the regular file at `path` names (never through a symlink), whether
    /// or not the file is still the one marked: what a refusal of a file changed since says.
    static func markedRequest(at path: String) -> String? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return read(fd)?.request
    }

    /// The mark on the file open as `fd`, as written; nil for none (or a damaged one).
    private static func read(_ fd: Int32) -> FinishedMark? {
        var buffer = [UInt8](repeating: 0, count: 256)
        let length = buffer.withUnsafeMutableBytes { haul_get_file_attribute(fd, attributeName, $0.baseAddress, $0.count) }
        guard length > 0 else { return nil }
        return FinishedMark(decoding: String(decoding: buffer.prefix(length), as: UTF8.self))
    }

    /// The same for the file open as `fd`.
    static func unchangedSinceMarked(_ fd: Int32) -> (request: String, identity: FileIdentity)? {
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, let mark = read(fd) else { return nil }
        let current = FileIdentity(info)
        // A bound further ahead of the clock than a mark puts it is no mark's: each one's is its
        // own moment (planted, or the clock set back since, it proves nothing).
        guard mark.identity == current, changeTime(info) <= mark.changedNoLaterThan,
            mark.changedNoLaterThan <= wallClockNanoseconds + changeTimeAllowance
        else {
            return nil
        }
        return (mark.request, current)
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
    }
}
