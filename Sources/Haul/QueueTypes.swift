import Foundation
import HaulCore
import HaulEngine

/// One download in the queue, as `DownloadQueue.items()` reports it.
public struct QueueItem: Sendable, Equatable {
    public let id: Int64
    public let url: URL?
    /// The URL as it may be shown: without a password (`Redaction.url`).
    public let urlString: String
    /// The file path, or the directory for a download named by the server.
    public let destination: String
    /// Whether `destination` is a directory (the file is named from the response).
    public let destinationIsDirectory: Bool
    public let finalPath: String?
    public let state: DownloadState
    public let priority: Int
    public let bytes: Int64
    public let totalBytes: Int64?
    public let bytesPerSecond: Double
    public let lastError: String?
    /// The `DownloadError.Category` name of the last failure.
    public let errorCategory: String?
}

/// The whole batch at a glance.
public struct QueueProgress: Sendable, Equatable {
    public var filesCompleted: Int
    public var filesFailed: Int
    public var filesTotal: Int
    /// Bytes on disk of the downloads this run has touched.
    public var bytes: Int64
    /// The sum of their totals, when every one is known.
    public var totalBytes: Int64?
    public var bytesPerSecond: Double
    /// The downloads moving bytes right now.
    public var active: [Int64: DownloadProgress]

    public init(
        filesCompleted: Int = 0, filesFailed: Int = 0, filesTotal: Int = 0, bytes: Int64 = 0, totalBytes: Int64? = nil, bytesPerSecond: Double = 0,
        active: [Int64: DownloadProgress] = [:]
    ) {
        self.filesCompleted = filesCompleted
        self.filesFailed = filesFailed
        self.filesTotal = filesTotal
        self.bytes = bytes
        self.totalBytes = totalBytes
        self.bytesPerSecond = bytesPerSecond
        self.active = active
    }
}

/// How the queue runs its downloads: the settings that are not stored per item.
public struct QueueRunOptions: Sendable {
    /// Downloads at once.
    public var maxConcurrent: Int
    public var retry: RetryPolicy
    public var transfer: TransferOptions
    public var maxRedirects: Int
    /// One speed limit for the whole run, shared by every download in it.
    public var rateLimiter: RateLimiter?
    /// Connections per file (nil: adapt); see `DownloadRequest.connections`.
    public var connections: Int?
    /// See `DownloadRequest.allowsHTTPRedirect`.
    public var allowsHTTPRedirect = false
    /// See `DownloadRequest.maxSize`.
    public var maxSize: Int64?
    /// Given, the run does not end when the queue is empty: its workers wait for new items until
    /// `stopAll()`, and this (not `maxConcurrent`) says how many run at once (`haul serve`).
    public var concurrency: QueueConcurrency?

    public init(
        maxConcurrent: Int = 4,
        retry: RetryPolicy = RetryPolicy(),
        transfer: TransferOptions = TransferOptions(),
        maxRedirects: Int = 10,
        rateLimiter: RateLimiter? = nil
    ) {
        self.maxConcurrent = maxConcurrent
        self.retry = retry
        self.transfer = transfer
        self.maxRedirects = maxRedirects
        self.rateLimiter = rateLimiter
    }
}

/// What a run of the queue did.
public struct QueueRunSummary: Sendable, Equatable {
    public var completed: [Int64] = []
    /// Failed downloads with their errors, in the order they failed.
    public var failed: [(id: Int64, error: DownloadError)] = []
    public var paused: [Int64] = []
    public var cancelled: [Int64] = []

    public static func == (lhs: QueueRunSummary, rhs: QueueRunSummary) -> Bool {
        lhs.completed == rhs.completed && lhs.paused == rhs.paused && lhs.cancelled == rhs.cancelled
            && lhs.failed.map(\.id) == rhs.failed.map(\.id) && lhs.failed.map(\.error) == rhs.failed.map(\.error)
    }
}

/// One event of one queued download.
public struct QueueEvent: Sendable, Equatable {
    public let id: Int64
    public let event: DownloadEvent
}
