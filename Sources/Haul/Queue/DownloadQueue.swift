import Foundation
import HaulCore
import HaulEngine
import HaulStore
import Synchronization

/// Many downloads, remembered in a store (SQLite in a state directory, or PostgreSQL shared by a
/// fleet of machines, see `QueueStoreLocation`): add them, run them with a concurrency limit,
/// pause, resume, cancel, remove, and observe them one by one or in aggregate. A paused or
/// interrupted download continues from the store, in this process or after a restart.
///
/// Several processes may share one store: each running item is leased to its process, and an item
/// whose owner died (even by `kill -9`) goes back to the queue and resumes from its record.
public final class DownloadQueue: Sendable {
    /// Where the store lives: the state directory, or the PostgreSQL URI without its password.
    public let stateDirectory: String
    let store: any QueueStorage
    /// Progress figures on their way to the store, off the transfers' threads.
    let progressWrites: ProgressWrites
    let transport: any HTTPTransport
    let owner: LeaseOwner
    // The live state of this process, one owner per kind. An operation that spans two of them
    // takes one lock at a time; where it does, a comment at the call says why that is safe.
    let subscribers = QueueSubscribers()
    let board = QueueProgressBoard()
    let running = RunningItems()
    let leases: HeldLeases
    /// Hands outcomes to the store and lets their leases go, in that order.
    let settler: QueueSettler
    /// Moves and removals with files of one download, one at a time in this process.
    let fileOperations = FileOperations()
    /// The downloads whose files a move of this process holds locked now.
    let moves = MovesUnderWay()

    /// `$XDG_DATA_HOME/haul`, else `~/.local/share/haul`.
    public static var defaultStateDirectory: String {
        let environment = ProcessInfo.processInfo.environment
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") {
            return (data as NSString).appendingPathComponent("haul")
        }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return (home as NSString).appendingPathComponent(".local/share/haul")
    }

    /// Opens the queue in `stateDirectory` (default: `defaultStateDirectory`); its downloads run on
    /// `engine` (default: libcurl on Linux, URLSession on Apple platforms).
    public convenience init(stateDirectory: String? = nil, engine: TransportEngine = .platformDefault) throws(DownloadError) {
        try self.init(stateDirectory: stateDirectory, transport: try engine.transportOrError())
    }

    /// Opens the queue in `stateDirectory` (default: `defaultStateDirectory`) with downloads on
    /// `transport` (tests use fakes). A `postgresql://` URI in place of the directory opens the
    /// shared store there (see `QueueStoreLocation`).
    package convenience init(stateDirectory: String? = nil, transport: any HTTPTransport) throws(DownloadError) {
        try self.init(store: QueueStoreLocation(stateDirectory ?? Self.defaultStateDirectory), transport: transport)
    }

    /// Opens the queue in `store`; its downloads run on `engine`.
    public convenience init(store: QueueStoreLocation, engine: TransportEngine = .platformDefault) throws(DownloadError) {
        try self.init(store: store, transport: try engine.transportOrError())
    }

    /// Opens the queue in `store` with downloads on `transport`.
    package init(store location: QueueStoreLocation, transport: any HTTPTransport) throws(DownloadError) {
        self.transport = transport
        stateDirectory = location.description
        let store = try location.open()
        let (writes, owner, leases) = (ProgressWrites(store: store), LeaseOwner(), HeldLeases())
        (self.store, progressWrites, self.owner, self.leases) = (store, writes, owner, leases)
        settler = QueueSettler(store: store, owner: owner, progressWrites: writes, leases: leases)
    }

    // MARK: control

    /// Pauses a download: a queued one at once, a running one at its next checkpoint (also when
    /// another process runs it).
    public func pause(_ id: Int64) throws(DownloadError) {
        let (_, action) = try storeCall { try $0.apply(.pauseRequested, to: id) }
        if action == .stopTransfer { control(id)?.request(.pause) }
    }

    /// Puts a paused or failed download back in the queue; it continues from its bytes on disk.
    public func resume(_ id: Int64) throws(DownloadError) {
        try storeCall { try $0.apply(.resumeRequested, to: id) }
        wakeWorkers()
    }

    /// Cancels a download. With `deletingPartial`, its partial file and record go too.
    public func cancel(_ id: Int64, deletingPartial: Bool = false) throws(DownloadError) {
        let (item, action) = try storeCall { try $0.apply(.cancelRequested, to: id) }
        if action == .stopTransfer, let control = control(id) {
            control.request(deletingPartial ? .cancelAndDelete : .cancel)
            return
        }
        store.forgetRemovedSecrets()
        guard deletingPartial else { return }
        if action == .stopTransfer {
            // Another process runs it: wait for its transfer to stop before deleting under it.
            let deadline = ContinuousClock.now + .seconds(Int64(store.leaseSeconds) + 5)
            while ContinuousClock.now < deadline, let current = try? store.item(id), current.state == .cancelling {
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
        deletePartial(of: item)
    }

    /// Removes a settled download from the queue. Its partial, if any, is deleted too, unless
    /// `keepingData`: then only the queue forgets it (aria2's `removeDownloadResult`), and a
    /// partial kept after a failure stays where the failure said it is.
    public func remove(_ id: Int64, keepingData: Bool = false) throws(DownloadError) {
        guard let item = try storeCall({ try $0.item(id) }) else {
            throw DownloadError(.usage, "no download \(id) in the queue")
        }
        guard item.state.isSettled || item.state == .queued else {
            throw DownloadError(.usage, "download \(id) is \(item.state.rawValue); cancel or pause it first")
        }
        // Its own partial goes first, while its record still says which file that is.
        if item.state != .completed, !keepingData { deletePartial(of: item) }
        try storeCall { try $0.remove(id) }
        store.forgetRemovedSecrets()
        subscribers.forgetHub(id)
    }

    /// Stops every running download of this process at a checkpoint and claims no new ones; they go
    /// back to the queue, to be resumed by the next run.
    public func stopAll() {
        for control in running.drain() { control.request(.pause) }
        wakeWorkers()
    }

    /// Idle workers of a long-running run look for work again.
    func wakeWorkers() {
        running.concurrency?.wake()
        store.wakeWaiters()
    }

    // MARK: observing

    /// The events of one download in this process, starting with what it missed (for one that
    /// ended, while it is among the last 1,024 that ended here).
    public func events(for id: Int64) -> AsyncStream<DownloadEvent> {
        hub(for: id, fresh: false).subscribe()
    }

    /// Aggregate progress of the current (or next) run: files done of total, bytes, speed. The
    /// stream ends when that run ends.
    public func aggregateProgress() -> AsyncStream<QueueProgress> {
        let (stream, continuation) = AsyncStream<QueueProgress>.makeStream(bufferingPolicy: .bufferingNewest(16))
        // Spans two owners: the board's last report is read under the subscribers' lock (the only
        // nesting, always in this order), so a report is either in it or reaches this stream.
        let board = self.board
        let id = subscribers.addAggregate(continuation, current: { board.aggregate })
        continuation.onTermination = { [weak self] _ in self?.subscribers.removeAggregate(id) }
        return stream
    }

    /// Every event of every download this process runs, tagged with the download's id. The stream
    /// ends when the run that follows ends.
    public func allEvents() -> AsyncStream<QueueEvent> {
        let (stream, continuation) = AsyncStream<QueueEvent>.makeStream()
        let id = subscribers.addEvents(continuation)
        continuation.onTermination = { [weak self] _ in self?.subscribers.removeEvents(id) }
        return stream
    }

    // MARK: internals shared with the runner

    @discardableResult
    func storeCall<T>(_ body: (any QueueStorage) throws -> T) throws(DownloadError) -> T {
        do {
            return try body(store)
        } catch {
            guard let error = error as? StoreError else { throw DownloadError(.io, "\(error)") }
            switch error.kind {
            case .notFound: throw DownloadError(.usage, error)
            case .conflict, .invalidValue: throw DownloadError(.usage, error)
            case .secretRefused: throw DownloadError(.secretRefused, error)
            default: throw DownloadError(.io, error)
            }
        }
    }

    func control(_ id: Int64) -> RunControl? {
        running.control(id)
    }

    /// The hub of a download; a new one when the last run ended (a failed download resumed).
    func hub(for id: Int64, fresh: Bool) -> EventHub {
        subscribers.hub(for: id, fresh: fresh) { EventHub(observer: { [weak self] event in self?.observe(id, event) }) }
    }

    static func absolute(_ path: String) -> String {
        AbsolutePath.of(path)
    }
}
