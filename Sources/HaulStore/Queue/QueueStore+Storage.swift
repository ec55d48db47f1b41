import Foundation

// The SQLite store as one of the two `QueueStorage`s: one machine, its processes share the file.
extension QueueStore: QueueStorage {
    public var location: String { path }
    public var isShared: Bool { false }
    public var leaseSeconds: Double { Self.leaseSeconds }

    /// Counted from the decoded rows: a row whose state cannot be read counts (a run fails it).
    public func pendingCount() throws(StoreError) -> Int {
        try all().filter { $0.state == .queued || $0.state.hasTransfer }.count
    }

    public func resumeRecord(_ id: Int64) -> any ResumeRecordStore {
        recordSlot(id)
    }

    public func resumeRecord(for item: StoredDownload) -> any ResumeRecordStore {
        recordSlot(for: item)
    }

    /// One machine: every item is added by a process of this machine, which wakes its own
    /// workers; a wait here is a plain timed wait that `wakeWaiters` ends.
    public func waitForWork(seconds: Double) {
        workSignal.wait(seconds: seconds)
    }

    public func wakeWaiters() {
        workSignal.wake()
    }
}
