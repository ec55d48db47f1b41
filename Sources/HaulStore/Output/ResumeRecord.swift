import Foundation
import HaulChecksum
import HaulCore

/// The durable facts that let a partial download continue, days later, without splicing versions.
public struct ResumeRecord: Codable, Sendable, Equatable {
    /// Bumped when the format changes incompatibly; an unknown version is treated as no record.
    public static let currentVersion = 1

    public var version: Int
    /// The URL the user asked for.
    public var originalURL: String
    /// The URL that answered, after redirects.
    public var finalURL: String
    /// The method and range the download was made with; a different invocation does not reuse the partial.
    public var method: String
    public var range: String?
    /// The version the bytes on disk belong to.
    public var validators: Validators
    /// The resource's complete length, when known.
    public var totalLength: Int64?
    /// The length the finished file will have, when known.
    public var finalLength: Int64?
    /// The content coding of the stored bytes (nil for identity).
    public var contentEncoding: String?
    /// The offset in the resource of the partial file's first byte.
    public var resourceStart: Int64
    /// Bytes known to be durable: the partial file was fdatasync'ed with at least this many bytes
    /// before this record was written.
    public var syncedLength: Int64
    /// The kernel boot during which the partial was last written. In the same boot, everything the
    /// process wrote is in the page cache even after `kill -9`, so the file's length can be trusted;
    /// after a reboot only `syncedLength` can.
    public var bootID: String?
    /// The file name chosen from the response, for downloads into a directory.
    public var fileName: String?
    /// Set just before the finished partial is renamed to its final name: if the process dies
    /// between the rename and forgetting the record, a final file of exactly this length is known
    /// to be this download, complete.
    public var finishedLength: Int64?
    /// Which file the finished download is (saved with `finishedLength`): a file at the final path
    /// is taken as this download's own, complete, only while all of this still matches.
    public var finishedIdentity: FileIdentity?
    /// Which file the partial is (its device and inode): what removing this download may delete,
    /// and nothing else at the same path.
    public var partialIdentity: FileIdentity?
    /// The partial is a file Haul adopted (`--continue`): it keeps its own permission bits. Any other
    /// partial is created 0600 and gets the usual mode (0666 less the umask) once complete.
    public var keepsOwnMode: Bool?
    /// A segmented download: the bytes of each segment known to be durable, beyond the sequential
    /// prefix of `segmentPrefix` bytes. Saved only after the file was synced, so it is trusted as is
    /// (the file's length means nothing when segments leave holes).
    public var segments: [Segment]?
    public var segmentPrefix: Int64?
    /// Fresher segment progress saved without a sync: trusted only in the boot `bootID` names.
    public var volatileSegments: [Segment]?
    public var volatileSegmentPrefix: Int64?
    /// Hosts that refused an extra connection of this download (503, 429), each with the
    /// connections it took: no run of this download asks it for more.
    public var connectionCaps: [ConnectionCap]?
    /// The digest's state over the first `hashState.length` bytes, when a checksum was asked for.
    public var hashState: SavedHashState?
    /// The whole-file digest the server published for this version, checked when the file is
    /// complete (a resumed response may not carry it again).
    public var serverDigest: ServerDigest?
    /// The file was adopted from another tool (`--continue`) and has not yet been proven against the server.
    public var isAdopted: Bool
    /// A `--continue` whose existing file did not match the server's: the file stays under its
    /// name and this download, once complete, replaces it.
    public var replacesExistingFile: Bool?
    public var updatedAt: Date

    public init(
        originalURL: String,
        finalURL: String,
        method: String = "GET",
        range: String? = nil,
        validators: Validators = .none,
        totalLength: Int64? = nil,
        finalLength: Int64? = nil,
        contentEncoding: String? = nil,
        resourceStart: Int64 = 0,
        syncedLength: Int64 = 0,
        bootID: String? = BootID.current,
        fileName: String? = nil,
        isAdopted: Bool = false,
        updatedAt: Date = Date()
    ) {
        self.version = Self.currentVersion
        self.originalURL = originalURL
        self.finalURL = finalURL
        self.method = method
        self.range = range
        self.validators = validators
        self.totalLength = totalLength
        self.finalLength = finalLength
        self.contentEncoding = contentEncoding
        self.resourceStart = resourceStart
        self.syncedLength = syncedLength
        self.bootID = bootID
        self.fileName = fileName
        self.isAdopted = isAdopted
        self.updatedAt = updatedAt
    }

    /// What the resume planner needs to know about the bytes on disk.
    public func partial(bytesOnDisk: Int64) -> LocalPartial {
        LocalPartial(
            bytesOnDisk: bytesOnDisk,
            resourceStart: resourceStart,
            validators: validators,
            totalLength: totalLength,
            contentEncoding: contentEncoding,
            isAdopted: isAdopted)
    }
}

/// A host that refused an extra connection of a download (503, 429), and how many it took.
public struct ConnectionCap: Codable, Sendable, Equatable {
    /// The host, as the download's URL names it.
    public var host: String
    /// The connections it served at once when it refused one more (at least 1).
    public var connections: Int

    /// `host` took `connections` connections at once and refused one more.
    public init(host: String, connections: Int) {
        self.host = host
        self.connections = max(1, connections)
    }
}

extension [ConnectionCap] {
    /// The connections `host` takes at most, when it refused one.
    public func cap(for host: String) -> Int? {
        first { $0.host == host }?.connections
    }

    /// `host` refused a connection while it served `connections`: kept, the lowest seen.
    public mutating func note(host: String, connections: Int) {
        let cap = ConnectionCap(host: host, connections: connections)
        if let index = firstIndex(where: { $0.host == host }) {
            self[index].connections = Swift.min(self[index].connections, cap.connections)
        } else {
            append(cap)
        }
    }
}

/// What tells one file from another at the same path: its inode and device, size and modification
/// time. A rename keeps all four; a user's edit, a copy or a new file changes at least one.
public struct FileIdentity: Codable, Sendable, Equatable {
    public var device: UInt64
    public var inode: UInt64
    public var size: Int64
    public var modifiedSeconds: Int64
    public var modifiedNanoseconds: Int64

    public init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modifiedSeconds = Int64(info.st_mtim.tv_sec)
        modifiedNanoseconds = Int64(info.st_mtim.tv_nsec)
    }

    /// The identity of the regular file at `path` (not following a symlink), nil if there is none.
    public static func of(_ path: String) -> FileIdentity? {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return FileIdentity(info)
    }
}
