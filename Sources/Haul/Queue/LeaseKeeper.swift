import Foundation
import HaulStore
import Synchronization

/// Renews this process's leases every few seconds, relays pause/cancel requests that other
/// processes wrote to the store to the running transfers, and truncates the write-ahead log when
/// secrets removed since are still due to be forgotten.
final class LeaseKeeper: Sendable {
    private let queue: DownloadQueue
    private let stopped = Atomic<Bool>(false)
    private let wake = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)

    init(queue: DownloadQueue) {
        self.queue = queue
    }

    func start() {
        let interval = LeaseDuration.renewalInterval(queue.store.leaseSeconds)
        let thread = Thread { [self] in
            while !stopped.load(ordering: .acquiring) {
                _ = wake.wait(timeout: .now() + interval)
                guard !stopped.load(ordering: .acquiring) else { break }
                // Controls first: each was registered after its claim committed, so its lease is in
                // the store unless another process took it over.
                let running = queue.liveControls()
                guard let states = try? queue.store.renewLeases(for: queue.owner) else { continue }
                for (id, state) in states {
                    switch state {
                    case .pausing: queue.control(id)?.request(.pause)
                    case .cancelling: queue.control(id)?.request(.cancel)
                    default: break
                    }
                }
                // A transfer whose lease another process took over (this one hung past the lease)
                // must stop at once: the item is someone else's now, and each write it would still
                // make (progress, record, settlement) names an epoch the store no longer has.
                for (id, control) in running where states[id] == nil {
                    queue.leaseLost(id)
                    control.request(.pause)
                }
                // Secrets a settlement removed within a second of the previous truncation.
                queue.store.forgetRemovedSecretsSoon()
            }
            done.signal()
        }
        thread.name = "haul-leases"
        thread.start()
    }

    func stop() {
        stopped.store(true, ordering: .releasing)
        wake.signal()
        done.wait()
    }
}
