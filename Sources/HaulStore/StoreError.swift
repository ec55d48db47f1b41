import Foundation

/// A failure reading or writing the partial file or its record.
public struct StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
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
        /// No such item in the queue.
        case notFound
    }

    public let kind: Kind
    public let message: String
    /// The errno behind it, when there is one.
    public let code: Int32?

    public init(_ kind: Kind, _ message: String, code: Int32? = nil) {
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

    public var description: String { message }
}
