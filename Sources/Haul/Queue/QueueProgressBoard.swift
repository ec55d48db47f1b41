import Foundation
import Synchronization

/// The figures of what runs in this process: each running download's latest progress, when it
/// was last written to the store, where its file will land, and the run's tally of what it was
/// asked for (`QueueTally`), from which the aggregate report is made. One of the queue's owners of
/// live state (with `QueueSubscribers`, `RunningItems`, `HeldLeases`).
final class QueueProgressBoard: Sendable {
    private struct State {
        var progress: [Int64: DownloadProgress] = [:]
        var persistedAt: [Int64: ContinuousClock.Instant] = [:]
        /// Where each running download's file will land, from its response, for the store.
        var destinations: [Int64: String] = [:]
        /// The run's figures of what it was asked for, beside `progress` (what moves now).
        var tally = QueueTally()
        /// The last aggregate report made.
        var aggregate = QueueProgress()
        /// The batch's speed, over the bytes its downloads moved.
        var speed = BatchSpeed()
    }

    /// How a download left the active set, for the tally.
    enum Ending: Equatable {
        /// Completed, at this size.
        case completed(bytes: Int64)
        case failed
        /// Cancelled or paused: its figures stay counted, as neither done nor failed.
        case stopped
        /// Its lease was lost: someone else's now, so nothing of this transfer counts.
        case lost
    }

    private let state = Mutex(State())
    /// When the next throttled aggregate report is due (nanoseconds on a monotonic clock).
    private let nextAggregateNanos = Atomic<Int64>(0)
    /// Least time between two throttled reports.
    private let aggregateInterval: Int64 = 250_000_000

    /// A run over `scope` begins: its tally, and a first report of it.
    func begin(_ tally: QueueTally) {
        state.withLock { state in
            state.tally = tally
            state.aggregate = tally.progress(active: [:])
        }
    }

    /// `id` starts running: counted among the files asked for, its progress written after its
    /// first second (a small file never costs a write for it).
    func started(_ id: Int64, at now: ContinuousClock.Instant = .now) {
        state.withLock { state in
            state.tally.started(id)
            state.persistedAt[id] = now
        }
    }

    /// `id`'s run starts with `bytes` already on disk (what it resumes from: not moved by this run).
    func resumes(_ id: Int64, from bytes: Int64) {
        state.withLock { $0.speed.started(id, from: bytes) }
    }

    /// Notes `progress` of `id`; returns where its file lands when the figures are due to be
    /// written (a pause's always: they are what the store shows while it is paused; others at
    /// most once a second), nil when not.
    func record(_ progress: DownloadProgress, of id: Int64, isPause: Bool, at now: ContinuousClock.Instant = .now) -> Due? {
        state.withLock { state in
            state.progress[id] = progress
            state.speed.reported(id, bytes: progress.bytes)
            guard isPause || now - (state.persistedAt[id] ?? now) >= .seconds(1) else { return nil }
            state.persistedAt[id] = now
            return Due(destination: state.destinations[id])
        }
    }

    /// Figures due to be written, and where the file lands (if its response said so yet).
    struct Due: Equatable {
        let destination: String?
    }

    /// `id`'s file lands at `destination` (from its response).
    func setDestination(_ destination: String, of id: Int64) {
        state.withLock { $0.destinations[id] = destination }
    }

    /// The latest progress of `id` and where its file lands, if it runs.
    func last(_ id: Int64) -> (progress: DownloadProgress, destination: String?)? {
        state.withLock { state in state.progress[id].map { ($0, state.destinations[id]) } }
    }

    /// The latest progress of every running download.
    var running: [Int64: DownloadProgress] { state.withLock { $0.progress } }

    /// A download leaves the active set; its figures and its ending are counted together, in one
    /// step, so no report counts its bytes both as moving and as ended (nor as neither).
    func ended(_ id: Int64, _ ending: Ending) {
        state.withLock { state in
            let last = state.progress.removeValue(forKey: id)
            state.speed.ended(id)
            state.persistedAt.removeValue(forKey: id)
            state.destinations.removeValue(forKey: id)
            switch ending {
            case .completed(let bytes):
                state.tally.completed += 1
                state.tally.ended(last: last, completedBytes: bytes)
            case .failed:
                state.tally.failed += 1
                state.tally.ended(last: last, completedBytes: nil)
            case .stopped:
                state.tally.ended(last: last, completedBytes: nil)
            case .lost:
                break
            }
        }
    }

    /// The last aggregate report made.
    var aggregate: QueueProgress { state.withLock { $0.aggregate } }

    /// A new aggregate report, when one is due (`force`, or a quarter of a second since the last);
    /// nil when not. Checked without the lock first: many workers report progress, few reports are due.
    func report(force: Bool) -> QueueProgress? {
        let nowNanos = Int64(DispatchTime.now().uptimeNanoseconds)
        guard force || nowNanos - nextAggregateNanos.load(ordering: .relaxed) >= 0 else { return nil }
        nextAggregateNanos.store(nowNanos + aggregateInterval, ordering: .relaxed)
        return state.withLock { state in
            state.speed.sample(at: Double(nowNanos) / 1e9)
            state.aggregate = state.tally.progress(active: state.progress, bytesPerSecond: state.speed.bytesPerSecond)
            return state.aggregate
        }
    }
}
