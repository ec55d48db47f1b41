import Foundation
import HaulCore
import HaulEngine
import HaulStore

/// A request as the queue stores it, and back: every field is kept typed, and what cannot be
/// stored is refused when the download is added, never dropped. Pure: tested without a store.
enum QueuedRequest {
    static func newDownload(_ request: DownloadRequest, priority: Int, paused: Bool) throws(DownloadError) -> NewDownload {
        let kind: StoredDownload.DestinationKind
        let path: String
        switch request.destination {
        case .file(let file):
            kind = .file
            path = AbsolutePath.of(file)
        case .directory(let directory):
            kind = .directory
            path = AbsolutePath.of(directory)
        case .standardOutput:
            throw DownloadError(.usage, "a queued download needs a file or directory, not standard output")
        }
        if request.urlRefresher != nil {
            throw DownloadError(.usage, "a URL refresher is code, which the queue cannot store; run such a download with Downloader instead")
        }
        return NewDownload(
            url: request.url.absoluteString, method: request.method, headers: request.headers.fields, body: request.body,
            destinationKind: kind, destination: path, range: request.targetDescription, existingPolicy: request.existingFile,
            priority: priority, paused: paused, options: storedOptions(request))
    }

    /// Everything else the request carries: its options, whole, as a download run later needs
    /// them (`DownloadOptions.toKeep`). A live limiter is not kept: its limit is, as the download's own.
    static func storedOptions(_ request: DownloadRequest) -> StoredOptions {
        var options = request.options.toKeep
        if options.bytesPerSecond == nil, let limit = request.rateLimiter?.bytesPerSecond, limit > 0 { options.bytesPerSecond = limit }
        return options
    }

    /// The request a stored item describes: what shapes the request and the file is the item's own
    /// (its options, stored when it was added; an item from before takes the run's); retries and
    /// timeouts are the run's, and the item's own speed limit, if any, runs within the run's shared
    /// one. A stored value that cannot be read again fails the item: a damaged range must never
    /// become a whole-file download.
    static func request(for item: StoredDownload, _ run: QueueRunOptions) throws(DownloadError) -> DownloadRequest {
        try refuseDamaged(item)
        return try request(readableFieldsOf: item, run)
    }

    /// A damaged item (see `RowDamage`) is never run nor changed: this says why.
    static func refuseDamaged(_ item: StoredDownload) throws(DownloadError) {
        guard let damage = item.damage else { return }
        throw DownloadError(.io, "download \(item.id): \(damage.reason); \(QueueItem.damagedRowAdvice)")
    }

    /// The request of `item` from what of it could be read, damaged or not: only for finding its
    /// files (see `DownloadQueue.deletePartial`), never for running it.
    static func request(readableFieldsOf item: StoredDownload, _ run: QueueRunOptions) throws(DownloadError) -> DownloadRequest {
        guard let url = URL(string: item.url) else {
            throw DownloadError(.usage, "download \(item.id) has an invalid URL: \(item.url)")
        }
        let destination: Destination = item.destinationKind == .file ? .file(item.destination) : .directory(item.destination)
        var request = DownloadRequest(url: url, destination: destination, method: item.method, headers: HTTPHeaders(item.headers), body: item.body)
        if let range = item.range {
            do throws(ByteRangeSpecError) {
                request.target = .range(try ByteRangeSpec(parsing: range))
            } catch {
                throw DownloadError(.usage, "download \(item.id) has a damaged stored range \"\(range)\" (\(error.message)); remove it and add it again")
            }
        }
        request.existingFile = item.existingPolicy
        request.retry = run.retry
        request.options = item.options.map { ownOptions($0, in: run) } ?? run.options
        request.rateLimiter = run.rateLimiter
        return request
    }

    /// An item's own options as `run` runs them: the run's timeouts and pacer, and its
    /// connection count and HTTP/2 where the item asked for neither. The rest is the item's.
    private static func ownOptions(_ stored: StoredOptions, in run: QueueRunOptions) -> DownloadOptions {
        var options = stored
        options.transfer.connectTimeout = run.transfer.connectTimeout
        options.transfer.stallTimeout = run.transfer.stallTimeout
        options.transfer.pacer = run.transfer.pacer
        options.connections = stored.connections ?? run.connections
        options.transfer.allowsHTTP2 = stored.transfer.allowsHTTP2 || run.transfer.allowsHTTP2
        return options
    }
}
