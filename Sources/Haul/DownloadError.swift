import Foundation

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
        /// The file is larger than the download's `maxSize` (the bytes received so far are kept).
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
    /// What went wrong and what became of the bytes, for a person.
    public let message: String
    /// The HTTP status, for `.httpStatus`.
    public let httpStatus: Int?

    /// An error of `category` told by `message`, with the HTTP status for `.httpStatus`.
    public init(_ category: Category, _ message: String, httpStatus: Int? = nil) {
        self.category = category
        self.message = message
        self.httpStatus = httpStatus
    }

    public var description: String { message }
}
