import Foundation
import HaulCore
import HaulStore

/// Adding downloads to the queue (identical requests find their items) and reading them back.
extension DownloadQueue {
    // MARK: adding and listing

    /// Adds one download; returns its id.
    @discardableResult
    public func add(_ request: DownloadRequest, priority: Int = 0, paused: Bool = false) throws(DownloadError) -> Int64 {
        let ids = try add([request], priority: priority, paused: paused)
        guard let id = ids.first else { throw DownloadError(.io, "the queue did not return an id") }
        return id
    }

    /// Adds downloads in one transaction: all or none. A request identical to an item already in
    /// the queue (queued, paused, running, failed, or completed with its file still in place)
    /// returns that item's id instead, so an app may add its requests at every launch. A
    /// destination that another unfinished download already uses (or that two of these share) is
    /// refused with `.destinationExists`.
    @discardableResult
    public func add(_ requests: [DownloadRequest], priority: Int = 0, paused: Bool = false) throws(DownloadError) -> [Int64] {
        var ids: [Int64?] = []
        var news: [NewDownload] = []
        let all = try requests.map { request throws(DownloadError) in try QueuedRequest.newDownload(request, priority: priority, paused: paused) }
        let known = try storeCall { try $0.knownItems(for: all) }
        for (new, known) in zip(all, known) {
            let same = Self.sameItem(as: new, known)
            ids.append(same)
            if same == nil { news.append(new) }
        }
        guard !news.isEmpty else { return ids.compactMap { $0 } }
        do {
            var added = try store.add(news).makeIterator()
            wakeWorkers()
            return ids.compactMap { $0 ?? added.next() }
        } catch  where error.kind == .conflict {
            throw DownloadError(.destinationExists, error)
        } catch  where error.kind == .secretRefused {
            throw DownloadError(.secretRefused, error)
        } catch {
            throw DownloadError(.io, error)
        }
    }

    /// The item `new` was added as before, if it is in the queue: the unfinished one at its place,
    /// or, when none is, the completed one whose file is still there. (Another unfinished item at
    /// its place is left for the store to refuse.)
    private static func sameItem(as new: NewDownload, _ known: KnownItems) -> Int64? {
        if let active = known.active { return new.isSameRequest(as: active) ? active.id : nil }
        if let done = known.completed, let path = done.finalPath, FileIO.exists(path), new.isSameRequest(as: done) {
            return done.id
        }
        return nil
    }

    /// What the queue already has for a request: the unfinished download that writes where it
    /// would, or else the newest completed download of the same URL to the same place whose file
    /// is still there.
    package struct Known: Sendable {
        /// The unfinished download at the request's place.
        package let existing: QueueItem?
        /// With none, the completed one whose file is still in place.
        package let completed: QueueItem?
    }

    /// `Known` for each of `requests`, in order, from one read of the store.
    package func known(_ requests: [DownloadRequest]) throws(DownloadError) -> [Known] {
        let news = try requests.map { request throws(DownloadError) in try QueuedRequest.newDownload(request, priority: 0, paused: false) }
        return try storeCall { try $0.knownItems(for: news) }.map { known in
            let done = known.completed.flatMap { item in item.finalPath.map { FileManager.default.fileExists(atPath: $0) } == true ? QueueItem(item) : nil }
            return Known(existing: known.active.map(QueueItem.init), completed: done)
        }
    }

    /// The unfinished download that writes where `request` would, if there is one.
    package func existingItem(for request: DownloadRequest) throws(DownloadError) -> QueueItem? {
        let new = try QueuedRequest.newDownload(request, priority: 0, paused: false)
        return try storeCall { try $0.activeItem(for: new) }.map(QueueItem.init)
    }

    /// The newest completed download of the same URL to the same place, if its file is still there.
    package func completedItem(for request: DownloadRequest) throws(DownloadError) -> QueueItem? {
        try known([request]).first?.completed
    }

    /// Every download in the queue, whatever its state, in the order they were added.
    public func items() throws(DownloadError) -> [QueueItem] {
        try storeCall { try $0.all() }.map(QueueItem.init)
    }

    /// The download with this id; nil when there is none.
    public func item(_ id: Int64) throws(DownloadError) -> QueueItem? {
        try storeCall { try $0.item(id) }.map(QueueItem.init)
    }
}
