import Foundation

/// The checks a download makes on its cookie options when it starts, for a command to make
/// before it starts or queues one.
package enum CookieFiles {
    /// The cookie file is readable and is one; the jar's directory is writable and what is at
    /// the jar's path already is nothing or a cookie file.
    package static func check(file: String?, jar: String?) throws(DownloadError) {
        _ = try CookieSession(file: file, jar: jar)
    }
}

/// The rule for a netrc file (`--netrc`, `--netrc-file`): it holds passwords, so a file other
/// users can read or change is refused rather than used.
package enum NetrcFile {
    /// Throws a usage error when the file is missing, unreadable, not a regular file, or open to
    /// other users.
    package static func check(_ path: String) throws(DownloadError) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw DownloadError(.usage, "cannot read the netrc file \(path): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw DownloadError(.usage, "the netrc file \(path) is not a regular file")
        }
        guard access(path, R_OK) == 0 else {
            throw DownloadError(.usage, "cannot read the netrc file \(path): \(String(cString: strerror(errno)))")
        }
        let mode = info.st_mode & 0o777
        if mode & 0o066 != 0 {
            throw DownloadError(
                .usage,
                "the netrc file \(path) can be read or changed by other users (mode 0\(String(mode, radix: 8))), so its passwords are not used: chmod 600 \(path)"
            )
        }
    }
}
