import Foundation
import HaulCore

/// A finished download opened for reading, proven by its `FinishedMark` to be the file Haul put in
/// place for one request and unchanged since: what `haul serve` hands out by GID. The proof is
/// taken on the open descriptor, so a file swapped in under the name after the check is not the
/// one read.
package struct FinishedFile: Sendable {
    /// The open descriptor (read-only); whoever asked for it closes it.
    package let fd: Int32
    package let identity: FileIdentity

    /// Why a file cannot be handed out.
    package enum Refusal: Error, Equatable {
        /// No regular file at the path (or a symlink, which is never followed).
        case missing
        /// A file is there, but not the one Haul finished for this request (no mark, another
        /// request's, or changed or replaced since).
        case notProven
        /// A file may be there, but it cannot be opened now (`errno`): the process is out of
        /// descriptors or memory, or may not read it. Not a sign it is gone.
        case unreadable(errno: Int32)
    }

    /// Opens the regular file at `path` (never through a symlink) when its mark proves it the
    /// finished download of the request `url`, `method`, `range`.
    package static func openProven(at path: String, url: String, method: String, range: String?) -> Result<FinishedFile, Refusal> {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let error = errno
            // Only "nothing there" (or a symlink, never followed) is missing; out of descriptors
            // under a flood of downloads is not.
            return .failure(error == ENOENT || error == ENOTDIR || error == ELOOP ? .missing : .unreadable(errno: error))
        }
        let key = FinishedMark.requestKey(of: ResumeRecord(originalURL: url, finalURL: url, method: method, range: range))
        guard let proven = FinishedMark.unchangedSinceMarked(fd), proven.request == key else {
            _ = close(fd)
            return .failure(.notProven)
        }
        // Reads wait for the disk, never for a peer.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return .success(FinishedFile(fd: fd, identity: proven.identity))
    }
}
