import Foundation
import HaulStore
import Synchronization

/// Renews this process's leases every few seconds, relays pause/cancel requests that other
/// processes wrote to the store to the running transfers, and truncates the write-ahead log when
/// secrets removed since are still due to be forgotten. A task, not a thread: it waits on an
/// `AsyncSignal`, and its store calls run on `BlockingWork`'s pool.
final class LeaseKeeper: Sendable {
    private let queue: DownloadQueue
    private let stopped = Atomic<Bool>(false)
    private let wake = AsyncSignal()
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(queue: DownloadQueue) {
        self.queue = queue
    }

    func start() {
        let interval = LeaseDuration.renewalInterval(queue.store.leaseSeconds)
        let running = Task { [self] in
            while !stopped.load(ordering: .acquiring) {
                await wake.wait(seconds: interval, unless: { self.stopped.load(ordering: .acquiring) })
                guard !stopped.load(ordering: .acquiring) else { break }
                await BlockingWork.run { renew() }
            }
        }
        task.withLock { $0 = running }
    }

    /// One round: renew, relay, lose, forget.
    private func renew() {
        // Controls first: each was registered after its claim committed, so its lease is in the
        // store unless another process took it over.
        let running = queue.running.controls
        // Only the leases this process knows it holds: a row a lost claim reply leased to it
        // expires and is rescued, never kept alive by a worker that does not know of it.
        let held = queue.leases.held
        guard let states = try? queue.store.renewLeases(Array(held.values)) else { return }
        for (id, state) in states {
            let request: RunControl.Request
            switch state {
            case .pausing: request = .pause
            case .cancelling: request = .cancel
            default: continue
            }
            // An item claimed ahead has no transfer yet: it hears the request as it starts.
            if let control = queue.control(id) { control.request(request) } else { queue.leases.requestAtStart(id, request) }
        }
        // A lease another process took over (this one hung past the lease) is lost: a transfer
        // under it must stop at once (the item is someone else's now, and each write it would
        // still make names a lease the store no longer has), and an item held ahead is passed
        // over. (An item let go meanwhile, its settlement committed while this renewal waited,
        // is not lost: it is done. Hence `lose`'s look at what is held now, not at the snapshot.)
        for (id, lease) in held where states[id] == nil {
            guard queue.leases.lose(lease) else { continue }
            running[id]?.request(.pause)
        }
        // Secrets a settlement removed within a second of the previous truncation.
        queue.store.forgetRemovedSecretsSoon()
    }

    /// Ends the renewals; returns once a round under way is over.
    func stop() async {
        stopped.store(true, ordering: .releasing)
        wake.notify()
        await task.withLock { $0 }?.value
    }
}
