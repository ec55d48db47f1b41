import Foundation
import HaulCore
import HaulStore

/// What a long-running queue (`haul serve`) needs beyond a batch: per-download options that change
/// while the download runs, and the progress of what runs now.
extension DownloadQueue {
    /// The options stored with a download (`haul queue add`'s per-download settings). Those of a
    /// damaged item are refused: changed and written back, defaults would replace what it asked.
    package func storedOptions(_ id: Int64) throws(DownloadError) -> DownloadOptions? {
        guard let item = try storeCall({ try $0.item(id) }) else {
            throw DownloadError(.usage, "no download \(id) in the queue")
        }
        try QueuedRequest.refuseDamaged(item)
        return item.options
    }

    /// Sets one download's speed limit (nil or 0: none of its own): stored for its next runs, and
    /// applied at once when it runs in this process under a long-running run.
    public func setSpeedLimit(_ id: Int64, bytesPerSecond: Int64?) throws(DownloadError) {
        var options = try storedOptions(id) ?? DownloadOptions()
        let limit = bytesPerSecond.flatMap { $0 > 0 ? $0 : nil }
        options.bytesPerSecond = limit
        try storeCall { try $0.updateOptions(id, options) }
        running.limiter(id)?.setLimit(bytesPerSecond: limit ?? 0)
    }

    /// The latest progress of every download running in this process.
    public func liveProgress() -> [Int64: DownloadProgress] {
        board.running
    }

    /// In a long-running run every download gets a limiter of its own (within the run's), kept so
    /// `setSpeedLimit` can change it while it runs: the download's own limit moves into it.
    func attachLimiter(_ request: inout DownloadRequest, id: Int64, stored: StoredOptions?, _ options: QueueRunOptions) {
        guard options.concurrency != nil else { return }
        let limiter = RateLimiter(bytesPerSecond: stored?.bytesPerSecond ?? 0, within: options.rateLimiter)
        request.rateLimiter = limiter
        request.options.bytesPerSecond = nil
        running.attach(limiter, to: id)
    }

    /// Makes `ids` claimed in this order, before any other waiting download (priorities are
    /// rewritten: the first gets the highest).
    public func setOrder(_ ids: [Int64]) throws(DownloadError) {
        let top = ids.count
        try storeCall { try $0.setPriorities(ids.enumerated().map { (id: $0.element, priority: top - $0.offset) }) }
    }
}
