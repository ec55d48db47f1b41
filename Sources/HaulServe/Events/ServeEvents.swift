import Foundation
import Haul
import HaulRPC
import HaulStore

/// The one publisher of `haul serve`'s notifications: each is journaled in the store (its id), then
/// sent to the WebSockets and the event streams, in that order and one at a time, so ids reach
/// the streams in increasing order. A completion is journaled once per download (the store's
/// unique index): a second one is not sent at all. Running downloads' figures go to the event
/// streams only, at most twice a second each, and are not kept.
///
/// `@unchecked Sendable`: `lastDurable` and `throttle` are guarded by `lock`, which is also held
/// across a journal write and its posting, so two publishers cannot swap their order.
final class ServeEvents: @unchecked Sendable {
    /// How many events the journal keeps.
    static let kept = 10_000

    private let queue: DownloadQueue
    private let server: LockedServer
    private let lock = NSLock()
    private var lastDurable: Int64 = 0
    private var throttle = ProgressThrottle()
    /// The notifications that end a download's run: its next figures go at once.
    private static let endsRun: Set<String> = ["aria2.onDownloadPause", "aria2.onDownloadStop", "aria2.onDownloadComplete", "aria2.onDownloadError"]

    init(queue: DownloadQueue, server: LockedServer) {
        self.queue = queue
        self.server = server
    }

    /// Journals the completions a server that died never journaled (and sends them), and learns
    /// the journal's newest id. Before the queue runs.
    func recover() {
        lock.withLock {
            if let missed = try? queue.journalMissedCompletions(keeping: Self.kept) {
                for event in missed { send(event.method, item: event.item, id: event.id) }
            }
            if let newest = try? queue.journal(after: .max, limit: 1).newest { lastDurable = max(lastDurable, newest) }
        }
    }

    /// Journals and sends notification `method` of download `item`.
    func publish(_ method: String, item: Int64) {
        lock.withLock {
            if Self.endsRun.contains(method) { throttle.forget(item) }
            let id: Int64?
            do {
                guard let journaled = try queue.journal(method, of: item, keeping: Self.kept) else { return }
                id = journaled
            } catch {
                // The store is out of reach: sent now, not kept (a client that reconnects meanwhile misses it).
                id = nil
            }
            send(method, item: item, id: id)
        }
    }

    /// A running download's figures, for the event streams (at most twice a second each).
    func progress(_ progress: DownloadProgress, of item: Int64, now: ContinuousClock.Instant = .now) {
        lock.withLock {
            guard throttle.admit(item, now: now) else { return }
            let bytes = EventStreamFormat.progress(
                gid: GID.string(item), completed: progress.bytes, total: progress.totalBytes, speed: progress.bytesPerSecond, lastDurable: lastDurable)
            server.get()?.publish(StreamEvent(durableID: nil, bytes: bytes))
        }
    }

    /// Caller holds `lock`.
    private func send(_ method: String, item: Int64, id: Int64?) {
        guard let server = server.get() else { return }
        server.notify(method, gid: GID.string(item))
        if let id { lastDurable = max(lastDurable, id) }
        let bytes = EventStreamFormat.notification(JournalEvent(id: id ?? lastDurable, item: item, method: method))
        server.publish(StreamEvent(durableID: id, bytes: bytes))
    }
}
