import Foundation

/// The one checkpoint of a download that runs on another thread (the event loop hands its syncs
/// away, see `PartialDownload.checkpointInBackground`): whether it runs, a wait for its end, and
/// its failure until someone takes it.
///
/// `@unchecked Sendable`: the loop's thread starts it, a pool thread ends it, the download's steps
/// wait for it; `lock` guards the state.
final class CheckpointInFlight: @unchecked Sendable {
    private let lock = NSLock()
    /// Signalled once when the running checkpoint ends; nil when none runs.
    private var running: DispatchSemaphore?
    private var failure: StoreError?

    /// Starts one, unless one runs already (false: this one is skipped).
    func start() -> Bool {
        lock.withLock {
            guard running == nil else { return false }
            running = DispatchSemaphore(value: 0)
            return true
        }
    }

    /// Whether one runs now.
    var isRunning: Bool { lock.withLock { running != nil } }

    /// The running checkpoint ended with `failure` (nil: saved).
    func ended(_ failure: StoreError?) {
        let done = lock.withLock { () -> DispatchSemaphore? in
            if let failure, self.failure == nil { self.failure = failure }
            defer { running = nil }
            return running
        }
        done?.signal()
    }

    /// Waits until no checkpoint runs; returns (and forgets) the failure of one that ended.
    func settle() -> StoreError? {
        if let done = lock.withLock({ running }) {
            done.wait()
            // Whoever else waits passes too.
            done.signal()
        }
        return takeFailure()
    }

    /// The failure of a checkpoint that ended, without waiting (and forgets it).
    func takeFailure() -> StoreError? {
        lock.withLock {
            defer { failure = nil }
            return failure
        }
    }
}
