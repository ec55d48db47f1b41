import Foundation

/// The file a download writes into before it is complete, opened without following symlinks.
///
/// Bytes are appended sequentially at `prefixLength`; the owner decides when to sync and record.
/// Segments fetched over other connections are written with `write(_:at:)`, which leaves
/// `prefixLength` alone. `@unchecked Sendable`: those connections only call `write(_:at:)` and `syncData()`,
/// which touch no stored state (pwrite and the data sync on one descriptor are thread-safe); the
/// descriptor is replaced (`startOverAsNewFile`) only after those connections have ended.
package final class PartialFile: @unchecked Sendable {
    package let path: String
    private var fd: Int32
    /// The sequential prefix: how many leading bytes are written in order, where `append` writes
    /// next. Opened, it is the file's size (all of it counts as the prefix until `setPrefixLength`
    /// or `truncate` says otherwise); segments written with `write(_:at:)` beyond it are not counted.
    package private(set) var prefixLength: Int64
    /// Where writeback was last started: every `writebackStride` bytes the kernel is asked to
    /// start writing (without waiting), so the sync that makes the file durable at the end finds
    /// little left to do.
    private var writebackStart: Int64
    static let writebackStride: Int64 = 32 << 20
    /// Which file `init` opened (or created), read with its checks: the partial's identity a
    /// record keeps, without another `fstat`. Not the new file's after `startOverAsNewFile`.
    package let openedIdentity: FileIdentity

    /// Opens the partial file, or creates it (`createNew`: it must not exist; nothing that was at
    /// the path before is ever written through). A symlink, anything but a regular file, and a
    /// file with other hard links (writing would change the linked file too) are refused.
    package init(path: String, createNew: Bool = false) throws(StoreError) {
        let flags = O_RDWR | O_NOFOLLOW | O_CLOEXEC | (createNew ? O_CREAT | O_EXCL : 0)
        let fd = open(path, flags, 0o600)
        guard fd >= 0 else { throw StoreError.system("cannot open the partial file", path: path) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let error = StoreError.system("cannot inspect", path: path)
            close(fd)
            throw error
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw StoreError(.unsafePath, "\(path) exists and is not a regular file; Haul will not write through it")
        }
        guard info.st_nlink <= 1 else {
            close(fd)
            throw StoreError(.unsafePath, "\(path) has \(info.st_nlink) hard links; writing to it would change the other files too, so Haul will not")
        }
        self.path = path
        self.fd = fd
        self.prefixLength = Int64(info.st_size)
        self.writebackStart = Int64(info.st_size)
        self.openedIdentity = FileIdentity(info)
    }

    deinit {
        close(fd)
    }

    /// Continues with a new, empty file at the same path, which must be free (the old file was
    /// moved away, e.g. an adopted file put back under its own name).
    package func startOverAsNewFile() throws(StoreError) {
        let fresh = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_CREAT | O_EXCL, 0o600)
        guard fresh >= 0 else { throw StoreError.system("cannot create the partial file", path: path) }
        close(fd)
        fd = fresh
        prefixLength = 0
        writebackStart = 0
    }

    /// Cuts the file to `newLength` bytes (bytes past what can be trusted, or everything for a restart).
    package func truncate(to newLength: Int64) throws(StoreError) {
        guard ftruncate(fd, off_t(newLength)) == 0 else {
            throw StoreError.system("cannot truncate", path: path)
        }
        prefixLength = newLength
        writebackStart = min(writebackStart, newLength)
    }

    /// Appends bytes at the end of the sequential prefix (`prefixLength`).
    package func append(_ bytes: UnsafeRawBufferPointer) throws(StoreError) {
        do {
            try FileIO.pwriteAll(fd, bytes, at: prefixLength, path: path)
        } catch {
            // Part of the chunk may have landed before the error (a short write, then ENOSPC):
            // the file, not this count, says how much is there.
            var info = stat()
            if fstat(fd, &info) == 0 { prefixLength = Int64(info.st_size) }
            throw error
        }
        prefixLength += Int64(bytes.count)
        if prefixLength - writebackStart >= Self.writebackStride {
            startWriteback()
        }
        CrashPoint.reach(.afterBodyWrite)
    }

    private func startWriteback() {
        PlatformSeams.startWriteback(fd, offset: writebackStart, length: prefixLength - writebackStart)
        writebackStart = prefixLength
    }

    /// Writes a segment's bytes at their offset; `prefixLength` is not changed.
    package func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(StoreError) {
        try FileIO.pwriteAll(fd, bytes, at: offset, path: path)
        CrashPoint.reach(.afterBodyWrite)
    }

    /// Reserves the file's full size where the file system supports it, so segments written out
    /// of order do not fragment it or hit ENOSPC late. Elsewhere nothing happens (no zeros are
    /// written): sparse writes work as well.
    package func preallocate(_ size: Int64) {
        do {
            try PlatformSeams.preallocate(fd, length: size, path: path)
        } catch {
            // Best effort, as documented: a disk too small shows up as ENOSPC on a write, which
            // stops the download with the bytes written so far kept.
        }
    }

    /// Declares how many leading bytes form the sequential prefix, without truncating: a segmented
    /// download's file holds segments beyond it, and once all are in, the prefix is the whole file.
    package func setPrefixLength(_ newLength: Int64) {
        prefixLength = newLength
        writebackStart = min(writebackStart, newLength)
    }

    /// Reads up to `count` bytes at `offset`; fewer at the end of the file.
    package func read(at offset: Int64, count: Int) throws(StoreError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let got = buffer.withUnsafeMutableBytes { raw in
                pread(fd, raw.baseAddress.map { $0 + filled }, count - filled, off_t(offset) + off_t(filled))
            }
            if got < 0 {
                if errno == EINTR { continue }
                throw StoreError.system("cannot read", path: path)
            }
            if got == 0 { break }
            filled += got
        }
        buffer.removeLast(count - filled)
        return buffer
    }

    /// Makes every byte written so far durable (`PlatformSeams.syncData`: fdatasync on Linux,
    /// `F_FULLFSYNC` on Apple platforms).
    package func syncData() throws(StoreError) {
        try syncDataAlone()
        CrashPoint.reach(.afterDataSync)
    }

    /// Dates the file `date`, its access and modification times both, as curl `-R` and wget do.
    /// Best effort: a file system that refuses keeps the time of writing.
    package func setModificationTime(_ date: Date) {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        guard seconds.isFinite, let whole = Int(exactly: seconds) else { return }
        let nanoseconds = Int((date.timeIntervalSince1970 - seconds) * 1e9)
        let time = timespec(tv_sec: whole, tv_nsec: nanoseconds)
        var times = [time, time]
        _ = futimens(fd, &times)
    }

    /// `syncData` without reaching its crash point: a group of files reaches it once for all.
    func syncDataAlone() throws(StoreError) {
        try PlatformSeams.syncData(fd, path: path)
    }

    /// Makes the file durable with all its metadata (its `FinishedMark` too): fsync, where
    /// `syncDataAlone` is fdatasync. For a finished file, whose size changed since its last sync
    /// anyway, the two cost the same.
    func syncWholeFileAlone() throws(StoreError) {
        try PlatformSeams.syncFile(fd, path: path)
    }

    /// Marks the file, as it is now, as the finished download of `request` (`FinishedMark`), and
    /// returns the identity marked; `expecting`: the identity an earlier mark gave it, which the
    /// file must still have (else it loses its mark); `changedAt`: the change time it must still
    /// have (nothing at all done to it since). Nil where the file system keeps no such mark.
    @discardableResult
    func markFinished(request: String, expecting: FileIdentity? = nil, changedAt: Int64? = nil) -> FileIdentity? {
        FinishedMark.mark(fd, request: request, expecting: expecting, changedAt: changedAt)
    }

    /// The request the file's mark proves it the finished download of, unchanged since; nil when
    /// no mark proves it.
    func finishedRequest() -> String? {
        FinishedMark.unchangedSinceMarked(fd)?.request
    }

    /// Makes the bytes of every file on this file's file system durable, this one's included, in
    /// one call (see `PlatformSeams.syncFileSystem`); false where the platform cannot, and
    /// nothing was done.
    func syncFileSystem() throws(StoreError) -> Bool {
        try PlatformSeams.syncFileSystem(fd, path: path)
    }

    /// The device (file system) the file is on; nil when it cannot be read.
    /// Bytes of disk the file holds now (its blocks: what a preallocation or segments reserved,
    /// holes excepted); 0 when it cannot be told.
    package var allocatedBytes: Int64 {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return 0 }
        return Int64(info.st_blocks) * 512
    }

    var device: UInt64? {
        var info = stat()
        return fstat(fd, &info) == 0 ? UInt64(info.st_dev) : nil
    }

    /// Which file this is (inode, size, modification time), for the record of a finished download.
    package func identity() throws(StoreError) -> FileIdentity {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw StoreError.system("cannot inspect", path: path) }
        return FileIdentity(info)
    }

    /// The file's change time (ctime, nanoseconds since 1970); nil when it cannot be read.
    func changeTime() -> Int64? {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        return FinishedMark.changeTime(info)
    }

    /// The mode a new file gets from this process: 0666 less the umask (read once, see
    /// `PlatformSeams.processUmask`; 022 when it cannot be read).
    package static let defaultFileMode: mode_t = 0o666 & ~(PlatformSeams.processUmask() ?? 0o022)

    /// Sets the permission bits (those of a file this one replaces). Best effort: a file system
    /// without permissions keeps its own.
    package func setPermissions(_ mode: mode_t) {
        _ = fchmod(fd, mode)
    }
}

/// An output that is not a regular file (a terminal, a pipe, `/dev/null`): written to directly,
/// never replaced, never resumed across runs.
package final class DirectOutput {
    package let path: String
    private let fd: Int32
    private let ownsDescriptor: Bool
    package private(set) var length: Int64 = 0

    /// Standard output.
    package init(standardOutput: Void = ()) {
        path = "-"
        fd = STDOUT_FILENO
        ownsDescriptor = false
    }

    /// An existing non-regular file such as `/dev/null`, opened for writing without creating or truncating it.
    package init(existing path: String) throws(StoreError) {
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw StoreError.system("cannot open", path: path) }
        self.path = path
        self.fd = fd
        ownsDescriptor = true
    }

    deinit {
        if ownsDescriptor { close(fd) }
    }

    package func append(_ bytes: UnsafeRawBufferPointer) throws(StoreError) {
        try FileIO.writeAll(fd, bytes, path: path)
        length += Int64(bytes.count)
    }
}
