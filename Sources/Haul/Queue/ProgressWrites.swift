import Foundation
import HaulStore
import Synchronization

/// The queue's progress figures on their way to the store, never on a transfer's thread.
///
/// Transfers report from the transport's event loop, where a store call would hold up every
/// transfer of the process for as long as the database takes (a slow disk, a PostgreSQL server
/// that stops answering). So a report only leaves its figures here, replacing the item's older
/// ones, and a thread of this type's own writes the latest of each item; while the store is slow,
/// newer figures replace those waiting, and nothing else waits. Before an item's settlement is
/// handed to the store, `flush` writes what is waiting for it (and waits for a write of it under
/// way), so the figures a settled item keeps are its last ones, never older ones landing after.
final class ProgressWrites: Sendable {
    /// One report's figures, as `QueueStorage.updateProgress` takes them.
    struct Figures: Sendable {
        let bytes: Int64
        let totalBytes: Int64?
        let bytesPerSecond: Double
        let finalPath: String?
        /// The lease the figures are written under: always one (a download whose lease was lost
        /// or let go posts none, see `HeldLeases.writable`), so the store fences every write.
        let lease: Lease
    }

    private let store: any QueueStorage
    private let waiting = Mutex<[Int64: Figures]>([:])
    /// A writer thread is running (or about to): a report need not start one.
    private let draining = Atomic<Bool>(false)
    /// Held while figures are being written, so a flush waits for a write under way.
    private let writing = NSLock()

    init(store: any QueueStorage) {
        self.store = store
    }

    /// Leaves `figures` for `id` to be written; returns at once.
    func post(_ id: Int64, _ figures: Figures) {
        waiting.withLock { $0[id] = figures }
        startWriterIfIdle()
    }

    /// Writes what waits for `ids` now, on the calling thread (one that may block: the store's
    /// settlement follows), after any write under way.
    func flush(_ ids: some Sequence<Int64>) {
        writing.withLock {
            let due = waiting.withLock { waiting in ids.compactMap { id in waiting.removeValue(forKey: id).map { (id, $0) } } }
            write(due)
        }
    }

    private func startWriterIfIdle() {
        guard !draining.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let thread = Thread { [self] in drain() }
        thread.name = "haul-progress-writes"
        thread.stackSize = 512 << 10
        thread.start()
    }

    /// Writes until nothing waits.
    private func drain() {
        while true {
            writing.withLock {
                let due = waiting.withLock { waiting in
                    defer { waiting.removeAll(keepingCapacity: true) }
                    return Array(waiting)
                }
                write(due.map { ($0.key, $0.value) })
            }
            draining.store(false, ordering: .releasing)
            // Figures left after the last look while `draining` was still set found no writer to
            // start: take them on, unless a new writer already did.
            guard waiting.withLock({ !$0.isEmpty }), !draining.exchange(true, ordering: .acquiringAndReleasing) else { return }
        }
    }

    private func write(_ due: [(Int64, Figures)]) {
        for (_, figures) in due {
            // A lost lease or an unreachable store: the next report tries again, and the store's
            // figures are only what `queue list` shows meanwhile.
            try? store.updateProgress(
                figures.lease, bytes: figures.bytes, totalBytes: figures.totalBytes, bytesPerSecond: figures.bytesPerSecond, finalPath: figures.finalPath)
        }
    }
}
