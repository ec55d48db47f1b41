import Foundation
import HaulCore

/// A Netscape cookie file on disk: read for `--cookies`, written back for `--cookie-jar`.
package enum CookieFile {
    /// Larger files are refused: no cookie file is anywhere near this, and it is read whole.
    static let maxBytes = 16 << 20

    /// The cookies in the file at `path`; a line that is not a cookie, a comment or blank refuses
    /// the file (it is not a cookie file, or not one Haul reads the same way curl would).
    package static func load(_ path: String) throws(StoreError) -> CookieJar {
        guard let text = try contents(of: path) else {
            throw StoreError(.io, "cannot read the cookie file \(path): \(String(cString: strerror(ENOENT)))", code: ENOENT)
        }
        let (jar, invalid) = CookieJar.parse(netscape: text)
        if let line = invalid.first {
            throw StoreError(.corruptRecord, "\(path) is not a Netscape cookie file (line \(line) is not a cookie)")
        }
        return jar
    }

    /// Whether a jar can be written at `path`, checked before a download starts rather than after
    /// it: its directory exists and is writable, and whatever is there already is a cookie file.
    package static func checkWritable(_ path: String) throws(StoreError) {
        let directory = AbsolutePath.directory(of: path)
        var info = stat()
        guard stat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw StoreError(.io, "cannot write the cookie jar \(path): its directory \(directory) does not exist")
        }
        guard access(directory, W_OK | X_OK) == 0 else { throw StoreError.system("cannot write the cookie jar in", path: directory) }
        if let text = try contents(of: path), let line = CookieJar.parse(netscape: text).invalidLines.first {
            throw StoreError(.unsafePath, "\(path) is not a Netscape cookie file (line \(line) is not a cookie); it would not be replaced by the cookie jar")
        }
    }

    /// Writes `jar` over what the file at `path` holds now (see `CookieJar.merged(into:)`), so
    /// downloads that share a jar keep each other's cookies: under an exclusive lock on the
    /// directory, into a new 0600 file (cookies are credentials) that replaces the old one
    /// atomically. A file there that is not a cookie file is never replaced.
    /// `readFromIt`: the jar was read from this very file (`--cookies F --cookie-jar F`).
    package static func save(_ jar: CookieJar, to path: String, readFromIt: Bool, now: Int64) throws(StoreError) {
        let directory = AbsolutePath.directory(of: path)
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directoryFD >= 0 else { throw StoreError.system("cannot open the directory of the cookie jar", path: directory) }
        defer { close(directoryFD) }
        while flock(directoryFD, LOCK_EX) != 0 {
            guard errno == EINTR else { throw StoreError.system("cannot lock the directory of the cookie jar", path: directory) }
        }
        var onDisk = CookieJar()
        if let text = try contents(of: path) {
            let (existing, invalid) = CookieJar.parse(netscape: text)
            if let line = invalid.first {
                throw StoreError(.unsafePath, "\(path) is not a Netscape cookie file (line \(line) is not a cookie); it was not replaced by the cookie jar")
            }
            onDisk = existing
        }
        let bytes = Array(jar.merged(into: onDisk, readFromIt: readFromIt).netscapeText(now: now).utf8)
        try FileIO.replace(path, with: bytes, temporary: "\(path).haul-tmp-\(getpid())", durably: true)
    }

    /// The file's text; nil when there is no file. Only a regular file is read.
    private static func contents(of path: String) throws(StoreError) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw StoreError.system("cannot read the cookie file", path: path)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw StoreError.system("cannot read the cookie file", path: path) }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw StoreError(.unsafePath, "\(path) is not a regular file, so it is no cookie file")
        }
        guard Int(info.st_size) <= maxBytes else {
            throw StoreError(.io, "the cookie file \(path) is larger than \(maxBytes >> 20) MiB")
        }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var total = 0
        while total < bytes.count {
            let count = bytes.withUnsafeMutableBytes { raw in
                read(fd, raw.baseAddress.map { $0 + total }, raw.count - total)
            }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw StoreError.system("cannot read the cookie file", path: path) }
            if count == 0 { break }
            total += count
        }
        return String(decoding: bytes[..<total], as: UTF8.self)
    }
}
