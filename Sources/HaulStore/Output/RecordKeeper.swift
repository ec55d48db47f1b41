import Foundation
import HaulChecksum
import HaulCore

/// The one owner of a download's resume record: it alone stamps, saves (durably or for this boot
/// only) and removes it, for single downloads, segmented ones and adopted files alike.
///
/// The order of durable writes is the caller's promise and this type's contract: a record that
/// claims `syncedLength` bytes (or segments) is saved only after the data it claims was synced.
/// `@unchecked Sendable`: the runner's thread and a segmented download's monitor both save through
/// it; `lock` serialises them and guards the stored state.
package final class RecordKeeper: @unchecked Sendable {
    private let store: any ResumeRecordStore
    private let lock = NSLock()
    private var stored = false
    /// Whether `stored` is known: the store was read (or written) by this run.
    private var known = false
    /// Whether the last record saved was a finished one.
    private var savedFinished = false
    /// The last segment progress saved durably; a volatile save keeps it beside the fresher one.
    private var durableSegments: (prefix: Int64, segments: [Segment])?

    package init(store: any ResumeRecordStore) {
        self.store = store
    }

    /// Whether a record exists in the store (loaded or saved by this run).
    package var isStored: Bool { lock.withLock { stored } }

    /// The stored record, nil when there is none; `.corruptRecord` when it cannot be understood.
    package func load() throws(StoreError) -> ResumeRecord? {
        let record = try store.load()
        lock.withLock {
            stored = record != nil
            known = true
            if let record, let segments = record.segments {
                durableSegments = (record.segmentPrefix ?? 0, segments)
            }
        }
        return record
    }

    /// Stamps `record` (this boot, the time, `syncedLength`, the digest state) and saves it
    /// durably. The caller has synced at least `syncedLength` bytes of the partial file.
    package func save(_ record: inout ResumeRecord, syncedLength: Int64, hash: StreamingHash? = nil) throws(StoreError) {
        Self.stamp(&record, syncedLength: syncedLength, hash: hash)
        try saveStamped(record)
    }

    /// Saves `record`, stamped by the caller with `stamp`, durably.
    package func saveStamped(_ record: ResumeRecord) throws(StoreError) {
        try locked { () throws(StoreError) in
            try store.save(record)
            noteSaved(record)
        }
        CrashPoint.reach(.afterRecordSave)
    }

    /// Saves the records of several downloads durably, as `save` does each (the records stamped
    /// by the caller with `stamp`), in one commit where their stores allow it: slots of one
    /// queue store. Returns each one's failure (nil: saved), in order; reaches the
    /// `after-record-save` crash point once. For a group being finished: no other save of these
    /// downloads runs meanwhile (their segments have ended).
    static func saveTogether(_ saves: [(keeper: RecordKeeper, record: ResumeRecord)]) -> [StoreError?] {
        guard !saves.isEmpty else { return [] }
        let slots = saves.compactMap { $0.keeper.store as? QueueRecordSlot }
        let failures: [StoreError?]
        if saves.count > 1, slots.count == saves.count, let queue = slots.first?.store, slots.allSatisfy({ $0.store === queue }) {
            failures = queue.saveRecords(zip(slots, saves).map { slot, save in (slot.id, save.record, slot.lease) })
        } else {
            failures = saves.map { save -> StoreError? in
                do throws(StoreError) {
                    try save.keeper.store.save(save.record)
                    return nil
                } catch {
                    return error
                }
            }
        }
        for (save, failure) in zip(saves, failures) where failure == nil {
            save.keeper.lock.withLock { save.keeper.noteSaved(save.record) }
        }
        CrashPoint.reach(.afterRecordSave)
        return failures
    }

    /// What every durable save writes besides the record's facts: this boot, the time,
    /// `syncedLength` (the caller synced that much) and the digest's state.
    static func stamp(_ record: inout ResumeRecord, syncedLength: Int64, hash: StreamingHash?) {
        record.syncedLength = syncedLength
        // A segmented partial continued over one connection (`-x 1`, or a host that took one):
        // its sequential prefix grows, synced, and the segments' record must say so, or the
        // next run trusts the prefix the segments last saw and fetches the rest again.
        if record.segments != nil { record.segmentPrefix = max(record.segmentPrefix ?? 0, syncedLength) }
        record.bootID = BootID.current
        record.updatedAt = Date()
        record.hashState = hash?.save() ?? record.hashState
    }

    /// `saved` is in the store now. Called holding `lock`.
    private func noteSaved(_ saved: ResumeRecord) {
        stored = true
        known = true
        savedFinished = saved.finishedLength != nil
        if let segments = saved.segments {
            durableSegments = (saved.segmentPrefix ?? 0, segments)
        }
    }

    /// Saves a segmented download's progress: `prefix` sequential bytes and `segments`. Durable
    /// (`synced`: the caller synced the file first) or trusted only within this boot. The durable
    /// part is what the last synced save claimed, so a reboot never trusts unsynced bytes.
    package func saveSegments(_ base: ResumeRecord, prefix: Int64, segments: [Segment], synced: Bool) throws(StoreError) {
        try locked { () throws(StoreError) in
            if synced { durableSegments = (prefix, segments) }
            let durable = durableSegments ?? (prefix: base.segmentPrefix ?? 0, segments: base.segments ?? [])
            var record = base
            record.segments = durable.segments
            record.segmentPrefix = durable.prefix
            record.volatileSegments = segments
            record.volatileSegmentPrefix = prefix
            record.syncedLength = durable.prefix
            record.bootID = BootID.current
            record.hashState = nil
            record.finishedLength = nil
            record.updatedAt = Date()
            if synced {
                try store.save(record)
            } else {
                try store.saveVolatile(record)
            }
            stored = true
            known = true
            savedFinished = false
        }
        CrashPoint.reach(.afterRecordSave)
    }

    /// Runs `body` holding the lock; typed throws pass through (NSLock.withLock erases them).
    private func locked(_ body: () throws(StoreError) -> Void) throws(StoreError) {
        lock.lock()
        defer { lock.unlock() }
        try body()
    }

    /// Forgets the record (after the finished file is in place, or when its bytes are given up).
    package func remove() {
        lock.withLock {
            guard stored else { return }
            CrashPoint.reach(.beforeRecordRemove)
            // A store that settles finished records itself (the queue's) forgets this one in the
            // commit that completes the download: nothing to write now.
            if !(savedFinished && store.settlesFinishedRecord) { store.remove() }
            stored = false
            savedFinished = false
            durableSegments = nil
        }
    }

    /// Forgets a record this run never loaded (one from another download of the same layout).
    package func discardStale() {
        lock.withLock {
            // A store read empty by this run has nothing to forget (a fresh download costs no write).
            if stored || !known { store.remove() }
            stored = false
            known = true
            savedFinished = false
            durableSegments = nil
        }
    }
}
