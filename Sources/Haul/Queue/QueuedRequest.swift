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

    /// Everything else the request carries, typed.
    static func storedOptions(_ request: DownloadRequest) -> StoredOptions {
        var options = StoredOptions()
        options.checksum = request.checksum
        options.minFreeSpace = request.minFreeSpace
        options.maxSize = request.maxSize
        options.serverDigest = request.verifiesServerDigest ? nil : false
        options.s3Checksums = request.asksS3Checksum ? true : nil
        options.http2 = request.transfer.allowsHTTP2 ? true : nil
        options.connections = request.connections
        options.bytesPerSecond = request.rateLimiter.map(\.bytesPerSecond).flatMap { $0 > 0 ? $0 : nil }
        options.verifyTLS = request.transfer.verifyTLS
        options.caFile = request.transfer.caFile
        options.allowsHTTPRedirect = request.allowsHTTPRedirect
        options.maxRedirects = request.maxRedirects
        options.proxy = request.transfer.proxy
        options.noProxy = request.transfer.noProxy
        options.netrcFile = request.transfer.netrcFile.map(AbsolutePath.of)
        options.cookieFile = request.cookieFile.map(AbsolutePath.of)
        options.cookieJar = request.cookieJar.map(AbsolutePath.of)
        options.mirrors = request.mirrors.isEmpty ? nil : request.mirrors.map(\.absoluteString)
        options.mirrorsUnverified = request.allowsUnverifiedMirrors ? true : nil
        return options
    }

    /// The request a stored item describes: what shapes the request and the file is the item's own
    /// (stored when it was added; an item from before takes the run's); retries and timeouts are the
    /// run's. The run's shared speed limit, when given, replaces the item's own. A stored value that cannot be read again fails the item: a damaged range must never
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
        request.transfer = run.transfer
        request.maxRedirects = run.maxRedirects
        request.connections = run.connections
        request.allowsHTTPRedirect = run.allowsHTTPRedirect
        request.maxSize = run.maxSize
        if let stored = item.options { try apply(stored, to: &request, id: item.id) }
        if let shared = run.rateLimiter {
            // The download's own limit, if any, within the run's.
            let own = request.rateLimiter?.bytesPerSecond ?? 0
            request.rateLimiter = own > 0 ? RateLimiter(bytesPerSecond: own, within: shared) : shared
        }
        return request
    }

    private static func apply(_ stored: StoredOptions, to request: inout DownloadRequest, id: Int64) throws(DownloadError) {
        if let checksum = stored.checksum { request.checksum = checksum }
        if let value = stored.minFreeSpace { request.minFreeSpace = value }
        request.verifiesServerDigest = stored.serverDigest ?? true
        request.asksS3Checksum = stored.s3Checksums ?? false
        request.transfer.allowsHTTP2 = stored.http2 ?? request.transfer.allowsHTTP2
        request.maxSize = stored.maxSize
        if let value = stored.connections { request.connections = value }
        request.rateLimiter = stored.bytesPerSecond.map { RateLimiter(bytesPerSecond: $0) }
        if let value = stored.verifyTLS { request.transfer.verifyTLS = value }
        request.transfer.caFile = stored.caFile
        if let value = stored.allowsHTTPRedirect { request.allowsHTTPRedirect = value }
        if let value = stored.maxRedirects { request.maxRedirects = value }
        request.transfer.proxy = stored.proxy
        request.transfer.noProxy = stored.noProxy
        request.transfer.netrcFile = stored.netrcFile
        request.cookieFile = stored.cookieFile
        request.cookieJar = stored.cookieJar
        request.allowsUnverifiedMirrors = stored.mirrorsUnverified ?? false
        request.mirrors = try (stored.mirrors ?? []).map { text throws(DownloadError) in
            guard let url = URL(string: text) else {
                throw DownloadError(.usage, "download \(id) has a damaged stored mirror \"\(Redaction.url(text))\"; remove it and add it again")
            }
            return url
        }
    }
}
