import Foundation
import HaulChecksum
import HaulCore

/// The durable facts that let a partial download continue, days later, without splicing versions.
package struct ResumeRecord: Codable, Sendable, Equatable {
    /// Bumped when the format changes incompatibly; an unknown version is treated as no record.
    package static let currentVersion = 1

    package var version: Int
    /// The URL the user asked for.
    package var originalURL: String
    /// The URL that answered, after redirects.
    package var finalURL: String
    /// The method and range the download was made with; a different invocation does not reuse the partial.
    package var method: String
    package var range: String?
    /// The version the bytes on disk belong to.
    package var validators: Validators
    /// The resource's complete length, when known.
    package var totalLength: Int64?
    /// The length the finished file will have, when known.
    package var finalLength: Int64?
    /// The content coding of the stored bytes (nil for identity).
    package var contentEncoding: String?
    /// The offset in the resource of the partial file's first byte.
    package var resourceStart: Int64
    /// Bytes known to be durable: the partial file was fdatasync'ed with at least this many bytes
    /// before this record was written.
    package var syncedLength: Int64
    /// The kernel boot during which the partial was last written. In the same boot, everything the
    /// process wrote is in the page cache even after `kill -9`, so the file's length can be trusted;
    /// after a reboot only `syncedLength` can.
    package var bootID: String?
    /// The file name chosen from the response, for downloads into a directory.
    package var fileName: String?
    /// Set just before the finished partial is renamed to its final name: if the process dies
    /// between the rename and forgetting the record, a final file of exactly this length is known
    /// to be this download, complete.
    package var finishedLength: Int64?
    /// Which file the finished download is (saved with `finishedLength`): a file at the final path
    /// is taken as this download's own, complete, only while all of this still matches.
    package var finishedIdentity: FileIdentity?
    /// Which file the partial is (its device and inode): what removing this download may delete,
    /// and nothing else at the same path.
    package var partialIdentity: FileIdentity?
    /// The partial is a file Haul adopted (`--continue`): it keeps its own permission bits. Any other
    /// partial is created 0600 and gets the usual mode (0666 less the umask) once complete.
    package var keepsOwnMode: Bool?
    /// A segmented download: the bytes of each segment known to be durable, beyond the sequential
    /// prefix of `segmentPrefix` bytes. Saved only after the file was synced, so it is trusted as is
    /// (the file's length means nothing when segments leave holes).
    package var segments: [Segment]?
    package var segmentPrefix: Int64?
    /// Fresher segment progress saved without a sync: trusted only in the boot `bootID` names.
    package var volatileSegments: [Segment]?
    package var volatileSegmentPrefix: Int64?
    /// Hosts that refused an extra connection of this download (503, 429), each with the
    /// connections it took: no run of this download asks it for more.
    package var connectionCaps: [ConnectionCap]?
    /// The digest's state over the first `hashState.length` bytes, when a checksum was asked for.
    package var hashState: SavedHashState?
    /// The whole-file digest the server published for this version, checked when the file is
    /// complete (a resumed response may not carry it again).
    package var serverDigest: ServerDigest?
    /// The file was adopted from another tool (`--continue`) and has not yet been proven against the server.
    package var isAdopted: Bool
    /// A `--continue` whose existing file did not match the server's: the file stays under its
    /// name and this download, once complete, replaces it.
    package var replacesExistingFile: Bool?
    package var updatedAt: Date

    package init(
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
    package func partial(bytesOnDisk: Int64) -> LocalPartial {
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
package struct ConnectionCap: Codable, Sendable, Equatable {
    /// The host, as the download's URL names it.
    package var host: String
    /// The connections it served at once when it refused one more (at least 1).
    package var connections: Int

    /// `host` took `connections` connections at once and refused one more.
    package init(host: String, connections: Int) {
        self.host = host
        self.connections = max(1, connections)
    }
}

extension [ConnectionCap] {
    /// The connections `host` takes at most, when it refused one.
    package func cap(for host: String) -> Int? {
        first { $0.host == host }?.connections
    }

    /// `host` refused a connection while it served `connections`: kept, the lowest seen.
    package mutating func note(host: String, connections: Int) {
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
package struct FileIdentity: Codable, Sendable, Equatable {
    package var device: UInt64
    package var inode: UInt64
    package var size: Int64
    package var modifiedSeconds: Int64
    package var modifiedNanoseconds: Int64

    package init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modifiedSeconds = Int64(info.st_mtim.tv_sec)
        modifiedNanoseconds = Int64(info.st_mtim.tv_nsec)
    }

    /// Whether `other` is the same file (device and inode), whatever its size and times now.
    package func isSameFile(as other: FileIdentity) -> Bool {
        device == other.device && inode == other.inode
    }

    /// The identity of the regular file at `path` (not following a symlink), nil if there is none.
    package static func of(_ path: String) -> FileIdentity? {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return FileIdentity(info)
    }
}
