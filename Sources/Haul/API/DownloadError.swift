import Foundation
import HaulCore
import HaulStore

/// Why a download did not complete. The bytes already on disk are kept unless the message says otherwise.
///
/// A struct with an open set of categories, so new ones can be added without breaking callers.
public struct DownloadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure; each maps to one exit code of the `haul` command.
    public struct Category: Sendable, Hashable, CustomStringConvertible {
        /// The category's stable name (`network`, `http-status`, ...), as `--json` and the queue show it.
        public let name: String
        private init(_ name: String) { self.name = name }

        /// The request itself is invalid (bad URL, bad option).
        public static let usage = Category("usage")
        /// The network failed (resolution, connection, timeouts, dropped transfers) and retries ran out.
        public static let network = Category("network")
        /// The server answered with a 4xx or 5xx status.
        public static let httpStatus = Category("http-status")
        /// The bytes on disk cannot be continued safely and were kept.
        public static let cannotResume = Category("cannot-resume")
        /// Writing or reading local files failed (disk full, permissions).
        public static let io = Category("io")
        /// A complete file is already at the destination.
        public static let destinationExists = Category("destination-exists")
        /// The server broke HTTP in a way that makes its bytes untrustworthy.
        public static let protocolViolation = Category("protocol")
        /// The file's digest is not the expected one (the data is kept as a partial file).
        public static let checksum = Category("checksum")
        /// The file is larger than the download's size limit allows (the bytes received so far are kept).
        public static let tooLarge = Category("too-large")
        /// The transfer engine cannot run the request as asked (libcurl refused an option Haul needs,
        /// e.g. a libcurl too old for it); retrying with the same engine cannot help.
        public static let engine = Category("engine")
        /// The download was cancelled through the API.
        public static let cancelled = Category("cancelled")
        /// A shared queue (PostgreSQL) refused to store a secret (a header, a body, a password):
        /// give credentials by reference on the workers (netrc, cookie file, environment).
        public static let secretRefused = Category("secret-refused")

        public var description: String { name }
    }

    /// What kind of failure it is.
    public let category: Category
    /// What went wrong and what became of the bytes, naming the settings that bear on it.
    package let text: SettingText
    /// What went wrong and what became of the bytes, for a person (settings called by the
    /// library's names; `message(naming:)` for another front end's).
    public var message: String { text.description }
    /// The HTTP status, for `.httpStatus`.
    public let httpStatus: Int?
    /// The settings the message names: what the caller may change for the download to go on
    /// (e.g. `.overwrite` and `.continueExisting` for a file already at the destination).
    public var hints: [DownloadSetting] { text.settings }

    /// The URL of the download that failed (as the request gave it).
    public internal(set) var url: URL?
    /// The file the failure is about: the destination that already exists, the file that could
    /// not be written or moved.
    public internal(set) var path: String?
    /// For a disk too full (`.io`) or a file too large (`.tooLarge`): the bytes needed and the bytes there were room for.
    public internal(set) var space: Space?
    /// The `errno` of the failed system call, when one failed.
    public internal(set) var systemError: Int32?
    /// The transfer engine's own code: libcurl's `CURLcode`, or URLSession's `URLError` code.
    public internal(set) var engineCode: Int?
    /// The bytes already downloaded that were kept, and where; nil when none were kept.
    public internal(set) var kept: KeptData?
    /// For `.destinationExists`: the destination is in the way because another process is
    /// downloading to it now (it holds the destination's lock), not because a file is there.
    public internal(set) var heldElsewhere = false

    /// Bytes needed against bytes available.
    public struct Space: Sendable, Equatable {
        /// Bytes the download needs (the rest of the file, with the free-space margin for a disk).
        public let needed: Int64
        /// Bytes there are (free on the disk, or allowed by the download's size limit).
        public let available: Int64

        /// `needed` bytes against `available`.
        public init(needed: Int64, available: Int64) {
            self.needed = needed
            self.available = available
        }
    }

    /// Downloaded bytes kept on disk after a failure.
    public struct KeptData: Sendable, Equatable {
        /// The file that holds them (the partial, an adopted file back under its name, a partial set aside).
        public let path: String
        /// How many bytes of the download it holds.
        public let bytes: Int64

        /// `bytes` kept in `path`.
        public init(path: String, bytes: Int64) {
            self.path = path
            self.bytes = bytes
        }
    }

    /// An error of `category` told by `text`, which may name settings (`\(setting: .proxy)`).
    package init(_ category: Category, _ text: SettingText, httpStatus: Int? = nil) {
        self.category = category
        self.text = text
        self.httpStatus = httpStatus
    }

    /// A failure of the file store as an error of `category`, with its `errno`.
    init(_ category: Category, _ error: StoreError) {
        self.init(category, SettingText(error.message))
        systemError = error.code
    }

    /// The message with each setting called by `names` (the `haul` command: its flags).
    package func message(naming names: SettingNames) -> String {
        text.rendered(names)
    }

    /// The same error told by `text`; every typed field is kept.
    func retold(_ text: SettingText) -> DownloadError {
        var error = DownloadError(category, text, httpStatus: httpStatus)
        error.url = url
        error.path = path
        error.space = space
        error.systemError = systemError
        error.engineCode = engineCode
        error.kept = kept
        error.heldElsewhere = heldElsewhere
        return error
    }

    public var description: String { message }
}
