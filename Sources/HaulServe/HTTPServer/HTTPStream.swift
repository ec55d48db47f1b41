import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A file's bytes to send after a response head: an open descriptor and the span of it to send.
/// The event loop reads it in chunks only as the socket drains (`HTTPServerLimits.streamChunkBytes`
/// at a time), so a large file costs one chunk of memory and no thread. Closed when released.
///
/// `@unchecked Sendable`: a worker creates it and hands it to the loop once (in a letter); from
/// then on only the loop thread reads from it or advances it.
final class FileBody: @unchecked Sendable {
    let fd: Int32
    /// The next byte to send, and how many are left.
    private(set) var offset: Int64
    private(set) var remaining: Int64

    /// The file's size, modification time and change time when it was handed over: a file changed
    /// since (rewritten in place, truncated, grown, even with its modification time put back) is not
    /// sent on, so no answer mixes its old and new bytes.
    private let baseline: FileVersion?

    /// Takes ownership of `fd`: it is closed with this.
    init(fd: Int32, offset: Int64, length: Int64) {
        self.fd = fd
        self.offset = offset
        remaining = length
        baseline = FileVersion(of: fd)
    }

    deinit { _ = systemClose(fd) }

    /// Sends only `length` bytes from `offset` (a range), before it is handed to the loop.
    func select(offset: Int64, length: Int64) {
        self.offset = offset
        remaining = length
    }

    /// What reading the next chunk came to.
    enum Read {
        case bytes(Data)
        case finished
        /// The file ended early or could not be read: the answer cannot be completed, and the
        /// connection must close (its announced length was not sent).
        case failed
    }

    /// Reads up to `limit` bytes at the current offset (pread: the descriptor's position is not
    /// used, and a regular file's read does not wait on a network).
    func next(limit: Int) -> Read {
        guard remaining > 0 else { return .finished }
        let count = Int(min(Int64(limit), remaining))
        var data = Data(count: count)
        let read = data.withUnsafeMutableBytes { raw in pread(fd, raw.baseAddress, count, off_t(offset)) }
        // Checked after the read: a write whose bytes the read saw had already moved the file's modification
        // time (the kernel stamps it before it copies), so a chunk with new bytes is never sent.
        guard read > 0, let baseline, FileVersion(of: fd) == baseline else { return .failed }
        if read < count { data.removeSubrange(read..<count) }
        offset += Int64(read)
        remaining -= Int64(read)
        return .bytes(data)
    }
}

/// What tells one version of an open file's bytes from the next: its size and modification time,
/// which every write moves (the ETag's parts that change), and its change time. A process that may
/// write the file may also put its modification time back (futimens) after rewriting it; the
/// change time is the kernel's own, which no process sets, and moves with that too. It also moves
/// on a rename, a deletion or a chmod, which leave the bytes as they were: such an answer is cut as
/// well, and its client resumes with `If-Range` (a file `haul.move` renamed is marked again and
/// keeps its ETag; one deleted is gone). A cut costs a resume; a finished answer with another
/// file's bytes under the old ETag would be believed.
private struct FileVersion: Equatable {
    let size: Int64
    let modified: timespec
    let changed: timespec

    init?(of fd: Int32) {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        size = Int64(info.st_size)
        modified = info.st_mtim
        changed = info.st_ctim
    }

    static func == (left: FileVersion, right: FileVersion) -> Bool {
        left.size == right.size && same(left.modified, right.modified) && same(left.changed, right.changed)
    }

    private static func same(_ left: timespec, _ right: timespec) -> Bool {
        left.tv_sec == right.tv_sec && left.tv_nsec == right.tv_nsec
    }
}

/// One event of the event stream (`text/event-stream`), formatted, and the id the journal gave it
/// (nil for a transient one, as progress figures, which are not kept and never replayed).
struct StreamEvent: Sendable, Equatable {
    let durableID: Int64?
    let bytes: Data
}

/// How a streamed request is answered: the worker decides (it may read the store and the disk),
/// the loop sends.
enum HTTPStreamReply: Sendable {
    /// It holds its connection for a stream (a file's body, not to a HEAD request; or events).
    func streams(_ head: HTTPRequestHead) -> Bool {
        switch self {
        case .whole: return false
        case .file: return head.method != "HEAD"
        case .events: return true
        }
    }

    /// A whole answer, as `respond(to:body:)` gives.
    case whole(HTTPResponse)
    /// `head` (its `announcedLength` is the body's length), then `body` as the socket drains. A
    /// HEAD request gets the head only.
    case file(HTTPResponse, FileBody)
    /// `head`, then `initial` (the events a client missed), then every event published with a
    /// durable id above `after` (and every transient one), until the client goes. Never ends by
    /// itself; a client that does not read is cut once its unsent bytes pass
    /// `HTTPServerLimits.streamBacklogBytes`.
    case events(HTTPResponse, initial: Data, after: Int64)
}
