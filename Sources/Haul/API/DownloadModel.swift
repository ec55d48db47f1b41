import Foundation
import Observation

/// A download as a SwiftUI view binds to it: `@Observable`, updated on the main actor from the
/// download's snapshots (`Download.snapshots(every:)`), with its controls. Keep it as long as the
/// view shows the download; it follows the download to its end.
@MainActor
@Observable
public final class DownloadModel {
    /// The download it shows.
    public let download: Download
    /// The latest state: phase, bytes, size, speed, time left, completion or error.
    public private(set) var snapshot = DownloadSnapshot()
    @ObservationIgnored private var follower: Task<Void, Never>?

    /// Follows `download`, reporting its state at most every `interval` seconds.
    public init(_ download: Download, every interval: Double = 0.25) {
        self.download = download
        let snapshots = download.snapshots(every: interval)
        follower = Task { [weak self] in
            for await snapshot in snapshots {
                guard let self else { return }
                self.snapshot = snapshot
            }
        }
    }

    isolated deinit {
        follower?.cancel()
    }

    /// `bytes` of the size, 0...1; nil while the size is unknown.
    public var fraction: Double? { snapshot.fraction }

    /// Pauses the download at its next checkpoint (`Download.pause()`).
    public func pause() { download.pause() }
    /// Continues a paused download from its bytes on disk (`Download.resume()`).
    public func resume() { download.resume() }
    /// Cancels the download, keeping its partial file (`Download.cancel()`).
    public func cancel() { download.cancel() }
}

/// The queue as a view binds to it: `@Observable`, updated on the main actor from its aggregate
/// progress (files done of total, bytes, speed) with the items read again at each report.
///
/// The store is never read on the main actor: the items are read on Haul's pool of blocking work
/// and only assigned here, so a store that is slow or locked by another process never holds up
/// the interface. `items` is empty until the first read has come back.
@MainActor
@Observable
public final class QueueModel {
    /// The queue it shows.
    public let queue: DownloadQueue
    /// The current (or last) run's totals.
    public private(set) var progress = QueueProgress()
    /// Every item, in the order they were added, as of the last read.
    public private(set) var items: [QueueItem] = []
    @ObservationIgnored private var follower: Task<Void, Never>?

    /// Follows `queue`'s runs in this process; the items are read at once, off the main actor.
    public init(_ queue: DownloadQueue) {
        self.queue = queue
        follower = Task { [weak self] in
            await self?.refreshItems()
            // One run's reports end with it; the next subscription waits for the next run.
            while !Task.isCancelled {
                guard let reports = self?.queue.aggregateProgress() else { return }
                for await report in reports {
                    guard let self else { return }
                    self.progress = report
                    await self.refreshItems()
                }
                await self?.refreshItems()
            }
        }
    }

    isolated deinit {
        follower?.cancel()
    }

    /// Reads the items again (after adding, removing or a run in another process), off the main
    /// actor; returns once they are assigned. A read that fails leaves the items as they were.
    public func refreshItems() async {
        if let fresh = await Self.readItems(of: queue) { items = fresh }
    }

    /// The items of `queue`, read on the pool of blocking work.
    private nonisolated static func readItems(of queue: DownloadQueue) async -> [QueueItem]? {
        await BlockingWork.run { try? queue.items() }
    }
}
