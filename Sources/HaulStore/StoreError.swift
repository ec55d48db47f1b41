import Foundation

/// A failure of the durable store: the partial file, its record, or the queue's database.
package struct StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure it is.
    package enum Kind: String, Sendable {
        /// The disk is full (ENOSPC) or a quota is exceeded (EDQUOT).
        case noSpace
        /// Any other I/O failure.
        case io
        /// A path holds something Haul must not write through (a symlink, a directory).
        case unsafePath
        /// A record exists but cannot be understood.
        case corruptRecord
        /// The queue database cannot be opened or understood (not SQLite, damaged, from a newer Haul).
        case corruptStore
        /// Another process holds the queue database locked for longer than the busy timeout.
        case locked
        /// The request conflicts with what the store holds (a destination already used, an illegal transition).
        case conflict
        /// Another process is downloading to the destination: it holds the destination's lock.
        case heldElsewhere
        /// No such item in the queue.
        case notFound
        /// A shared store (PostgreSQL) refuses to keep a secret: its old row versions and its
        /// write-ahead log would keep a copy no one can remove (see `SharedStoreRule`).
        case secretRefused
        /// The queue's database server cannot be reached (after retrying with backoff).
        case unavailable
        /// A value no queue database can keep as given (a NUL inside a URL, a path or a header:
        /// PostgreSQL's text cannot hold one, and no path or request line may).
        case invalidValue
    }

    /// What kind of failure it is.
    package let kind: Kind
    /// What went wrong, naming the path or the download, for a person.
    package let message: String
    /// The errno behind it, when there is one.
    package let code: Int32?

    /// An error of `kind` told by `message`, with the errno behind it when there is one.
    package init(_ kind: Kind, _ message: String, code: Int32? = nil) {
        self.kind = kind
        self.message = message
        self.code = code
    }

    /// An error from a failed system call, classified by errno.
    static func system(_ what: String, path: String, errno code: Int32 = errno) -> StoreError {
        let reason = String(cString: strerror(code))
        switch code {
        case ENOSPC, EDQUOT:
            return StoreError(.noSpace, "\(what) \(path): \(reason)", code: code)
        case ELOOP:
            return StoreError(.unsafePath, "\(what) \(path): it is a symbolic link, which Haul does not follow", code: code)
        default:
            return StoreError(.io, "\(what) \(path): \(reason)", code: code)
        }
    }

    package var description: String { message }
}
