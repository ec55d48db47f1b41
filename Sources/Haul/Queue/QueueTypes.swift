import Foundation
import HaulCore
import HaulEngine

/// One download in the queue, as `DownloadQueue.items()` reports it.
public struct QueueItem: Sendable, Equatable {
    /// The download's id in the queue.
    public let id: Int64
    /// The URL as stored; nil when the stored text is no longer a valid URL.
    public let url: URL?
    /// The URL as it may be shown: without a password (`Redaction.url`).
    public let urlString: String
    /// The file path, or the directory for a download named by the server.
    public let destination: String
    /// Whether `destination` is a directory (the file is named from the response).
    public let destinationIsDirectory: Bool
    /// Where the finished file is, or will be once known; nil while a server-named file has no name yet.
    public let finalPath: String?
    /// Where it is in its life: queued, running, paused, completed...
    public let state: DownloadState
    /// Higher runs first; equal priorities run in the order they were added.
    public let priority: Int
    /// Bytes on disk, as last recorded.
    public let bytes: Int64
    /// The finished file's length; nil until a server announces it.
    public let totalBytes: Int64?
    /// Speed in bytes per second while it runs; 0 otherwise.
    public let bytesPerSecond: Double
    /// The message of its last failure; nil when none.
    public let lastError: String?
    /// The `DownloadError.Category` name of the last failure.
    public let errorCategory: String?
}

/// The whole batch at a glance. The figures cover what the run was asked for (the ids given to
/// `DownloadQueue.run(_:only:maxPerHost:)`, else the whole queue), including what was already
/// complete when it began: a relaunch of a batch starts from the files it finished before and
/// ends at the whole, and `bytes` never passes `totalBytes`.
public struct QueueProgress: Sendable, Equatable {
    /// Downloads complete: those already complete when the run began and those it completed.
    public var filesCompleted: Int
    /// Downloads of this run that failed so far.
    public var filesFailed: Int
    /// Downloads asked for: those already complete when the run began and those it set out to do
    /// (queued, or left running by a process that died). Paused, failed and cancelled items it
    /// will not run are not counted.
    public var filesTotal: Int
    /// Bytes on disk of those downloads: the complete ones' files, and what this run has of the others it touched.
    public var bytes: Int64
    /// The sum of their totals (a complete file's size, a running download's announced length, an
    /// ended one's total), never below `bytes`; nil while a running download's length is unknown.
    public var totalBytes: Int64?
    /// The batch's speed in bytes per second: the bytes its downloads moved in this run,
    /// measured over the last seconds (a second at least; 0 before), so a batch of downloads each
    /// shorter than a second has one. Not the sum of `active`'s speeds.
    public var bytesPerSecond: Double
    /// The downloads moving bytes right now.
    public var active: [Int64: DownloadProgress]

    /// Aggregate progress with these values; zero by default.
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

/// How the queue runs its downloads: the settings that are not stored per item, and the options
/// of items stored without options of their own. Those options' properties read and write as its
/// own (`run.maxRedirects`, `run.transfer.connectTimeout`).
@dynamicMemberLookup
public struct QueueRunOptions: Sendable {
    /// Downloads at once.
    public var maxConcurrent: Int
    /// Retries of transient failures for each download.
    public var retry: RetryPolicy
    /// The options of downloads added without options of their own (`DownloadOptions`: rows from
    /// before they were stored). Of the others, the run gives only the timeouts and pacer of its
    /// `transfer`, and `connections` and `transfer.allowsHTTP2` where the item has none.
    public var options = DownloadOptions()
    /// One speed limit for the whole run, shared by every download in it.
    public var rateLimiter: RateLimiter?
    /// Given, the run does not end when the queue is empty: its workers wait for new items until
    /// `stopAll()`, and this (not `maxConcurrent`) says how many run at once (`haul serve`).
    public var concurrency: QueueConcurrency?
    /// How many items a batch run claims in one store transaction at most: those its free workers
    /// ask for, and the rest held ahead (leased, shown as running) for the next ones to take
    /// without a transaction. Nil: as many as `maxConcurrent`. 1 claims only what a worker asks
    /// for (a fleet sharing a few long items fairly). A long-running run (`concurrency`) never
    /// claims ahead.
    public var claimBatch: Int?
    /// What the failure messages the store keeps call settings: the library's names by default;
    /// a front end passes its own (`haul` its flags), so `queue list` speaks as the front end does.
    package var settingNames = SettingNames.library

    /// Run settings; by default 4 downloads at once, retries as `RetryPolicy()`, no speed limit.
    public init(
        maxConcurrent: Int = 4,
        retry: RetryPolicy = RetryPolicy(),
        transfer: TransferOptions = TransferOptions(),
        maxRedirects: Int = 10,
        rateLimiter: RateLimiter? = nil
    ) {
        self.maxConcurrent = maxConcurrent
        self.retry = retry
        self.rateLimiter = rateLimiter
        options.transfer = transfer
        options.maxRedirects = maxRedirects
    }

    /// An option of `options`, read and written as the run's own.
    public subscript<Value>(dynamicMember option: WritableKeyPath<DownloadOptions, Value>) -> Value {
        get { options[keyPath: option] }
        set { options[keyPath: option] = newValue }
    }
}

/// What a run of the queue did.
public struct QueueRunSummary: Sendable, Equatable {
    /// Downloads completed, in the order they completed.
    public var completed: [Int64] = []
    /// Those of `completed` that were already complete: their file was in place, proven this
    /// request's finished download, and nothing was fetched (``DownloadCompletion/alreadyComplete``).
    public var alreadyComplete: [Int64] = []
    /// Failed downloads with their errors, in the order they failed.
    public var failed: [(id: Int64, error: DownloadError)] = []
    /// Downloads stopped at a checkpoint (paused, or sent back to the queue by `stopAll()`).
    public var paused: [Int64] = []
    /// Downloads cancelled.
    public var cancelled: [Int64] = []
    /// How the completed files were put in place together.
    package var finishGroups = FinishGroupFigures()

    /// A run that ran nothing (yet).
    public init() {}

    public static func == (lhs: QueueRunSummary, rhs: QueueRunSummary) -> Bool {
        lhs.completed == rhs.completed && lhs.alreadyComplete == rhs.alreadyComplete && lhs.paused == rhs.paused && lhs.cancelled == rhs.cancelled
            && lhs.failed.map(\.id) == rhs.failed.map(\.id) && lhs.failed.map(\.error) == rhs.failed.map(\.error)
    }
}

/// How a queue run's finished files were grouped: those that finish while a group is being put in
/// place (synced, marked finished in one commit, renamed, their directories synced) form the next.
package struct FinishGroupFigures: Equatable, Sendable {
    /// Groups finished.
    package var groups = 0
    /// Downloads put in place in them (failed ones included).
    package var members = 0
    /// The largest group.
    package var largest = 0

    /// No group yet.
    package init() {}
}

/// One event of one queued download.
public struct QueueEvent: Sendable, Equatable {
    /// The id of the download it belongs to.
    public let id: Int64
    /// The event.
    public let event: DownloadEvent
}
