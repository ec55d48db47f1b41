import Foundation
import Synchronization

/// How many downloads a long-running queue (`haul serve`) runs at once, changeable while it runs,
/// the signal that wakes its idle workers when there may be something new to claim, and whether
/// the run is to end (a stop asked for before the run started is kept, never lost).
///
/// A run given one keeps going when the queue is empty: its workers wait here (for a wake-up, or
/// a few seconds, to notice items other processes added) until `DownloadQueue.stopAll()`.
public final class QueueConcurrency: Sendable {
    /// Workers a run starts; at most this many downloads run at once, whatever `limit` says.
    public let maximum: Int
    private let current: Atomic<Int>
    private let stopped = Atomic<Bool>(false)
    private let signal = AsyncSignal()

    /// `limit` downloads at once (at least 1), never more than `maximum` workers.
    public init(limit: Int, maximum: Int = 16) {
        self.maximum = max(1, maximum)
        current = Atomic(min(max(1, limit), max(1, maximum)))
    }

    /// Downloads at once, now.
    public var limit: Int { current.load(ordering: .relaxed) }

    /// Changes the limit: a raise starts claiming at once; a cut lets running downloads finish.
    public func setLimit(_ value: Int) {
        current.store(min(max(1, value), maximum), ordering: .relaxed)
        wake()
    }

    /// Ends the run it is given to, also one not started yet: its downloads pause at a checkpoint
    /// (with `DownloadQueue.stopAll()`), and a run that starts later ends at once. For good.
    package func requestStop() {
        stopped.store(true, ordering: .sequentiallyConsistent)
        wake()
    }

    /// Whether `requestStop()` was called.
    package var isStopRequested: Bool { stopped.load(ordering: .sequentiallyConsistent) }

    /// Wakes every idle worker (an item was added or resumed, the limit changed, the run stops).
    package func wake() {
        signal.notify()
    }

    /// Counts wake-ups: read before looking for work, passed to `idle`, so a wake-up in between is not lost.
    var wakeUps: Int { signal.generation }

    /// Waits for a wake-up (since `seen`) or `seconds`, whichever comes first, holding no thread.
    func idle(seconds: Double, since seen: Int? = nil) async {
        await signal.wait(seconds: seconds, since: seen)
    }
}
