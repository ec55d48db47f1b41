import Foundation

// The SQLite store as one of the two `QueueStorage`s: one machine, its processes share the file.
extension QueueStore: QueueStorage {
    package var location: String { path }
    package var isShared: Bool { false }
    package var leaseSeconds: Double { Self.leaseSeconds }

    /// Counted from the decoded rows: a row whose state cannot be read counts (a run fails it).
    package func pendingCount() throws(StoreError) -> Int {
        try all().filter { $0.state == .queued || $0.state.hasTransfer }.count
    }

    package func resumeRecord(_ id: Int64) -> any ResumeRecordStore {
        recordSlot(id)
    }

    package func resumeRecord(for item: StoredDownload) -> any ResumeRecordStore {
        recordSlot(for: item)
    }

    /// One machine: every item is added by a process of this machine, which wakes its own
    /// workers; a wait here is a plain timed wait that `wakeWaiters` ends.
    package func waitForWork(seconds: Double) {
        workSignal.wait(seconds: seconds)
    }

    package func wakeWaiters() {
        workSignal.wake()
    }
}
