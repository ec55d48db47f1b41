import Foundation
import HaulCore

/// Why the output of a download cannot be opened, written or put in place. The download turns it
/// into its own error, category for kind.
package struct OutputError: Error, Sendable, Equatable {
    /// What kind of failure it is.
    package enum Kind: Sendable, Equatable {
        /// The destination cannot be used as given (a directory where a file was named).
        case usage
        /// Something is at the destination that must not be replaced or written through.
        case destinationExists
        /// Another process is downloading to the destination (it holds its lock): a destination
        /// in the way, for now.
        case heldElsewhere
        /// Reading or writing the files failed.
        case io
        /// The bytes on disk cannot be continued and must not be discarded.
        case cannotResume
    }

    /// What kind of failure it is.
    package let kind: Kind
    /// What went wrong, naming the settings that bear on it.
    package let text: SettingText
    /// The file the failure is about.
    package var path: String?
    /// The `errno` of the failed system call.
    package var systemError: Int32?

    /// A failure of `kind` told by `text`, about `path`, with the `errno` behind it.
    package init(_ kind: Kind, _ text: SettingText, path: String? = nil, systemError: Int32? = nil) {
        self.kind = kind
        self.text = text
        self.path = path
        self.systemError = systemError
    }

    /// A store failure: an unsafe path (a symlink) is a destination that exists, the rest are I/O.
    static func store(_ error: StoreError, path: String? = nil) -> OutputError {
        let kind: Kind
        switch error.kind {
        case .unsafePath, .conflict: kind = .destinationExists
        case .heldElsewhere: kind = .heldElsewhere
        default: kind = .io
        }
        return OutputError(kind, SettingText(error.message), path: path, systemError: error.code)
    }

    /// A store failure that is I/O whatever its kind.
    static func io(_ error: StoreError, path: String? = nil) -> OutputError {
        OutputError(.io, SettingText(error.message), path: path, systemError: error.code)
    }

    /// `path` is a symlink: never written through, moved or deleted.
    static func symlink(_ path: String) -> OutputError {
        OutputError(
            .destinationExists, "\(path) is a symbolic link; Haul never writes through, moves or deletes one (name the real file instead)", path: path)
    }

    /// The finished download of the same request, changed since it was put in place (written,
    /// touched, linked or moved): in the way as any other file, with the reason.
    static func changedSinceFinished(_ path: String) -> OutputError {
        OutputError(
            .destinationExists,
            "\(path) is no longer the file Haul finished for this URL (it was written, touched, linked or moved since) and is left as it is; use \(setting: .overwrite) to fetch it again or \(setting: .continueExisting) to continue it",
            path: path)
    }

    /// A file is at `path` and the request neither replaces nor continues it.
    static func alreadyExists(_ path: String) -> OutputError {
        OutputError(
            .destinationExists, "\(path) already exists; use \(setting: .overwrite) to replace it or \(setting: .continueExisting) to continue it",
            path: path)
    }
}
