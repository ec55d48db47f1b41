import Foundation
import HaulCore

// Progress figures and the resume record, both kept in the item's row.
extension QueueStore {
    /// Records progress; with `epoch`, only while the item is still leased under that epoch.
    package func updateProgress(
        _ id: Int64, bytes: Int64, totalBytes: Int64?, bytesPerSecond: Double, finalPath: String?, epoch: Int64? = nil
    ) throws(StoreError) {
        try write { db in
            try db.execute(
                """
                UPDATE downloads SET bytes = ?, total_bytes = ?, speed = ?, final_path = COALESCE(?, final_path), updated_at = ?
                WHERE id = ? AND (? IS NULL OR lease_epoch = ?)
                """,
                [
                    .integer(bytes), totalBytes.map(SQLiteValue.integer) ?? .null, .real(bytesPerSecond),
                    finalPath.map(SQLiteValue.text) ?? .null, .real(Date().timeIntervalSince1970), .integer(id),
                    epoch.map(SQLiteValue.integer) ?? .null, epoch.map(SQLiteValue.integer) ?? .null,
                ])
            if epoch != nil, db.changes == 0 { throw Self.leaseLost(id) }
        }
    }

    /// A write of a transfer whose lease was lost (the item was leased again, or removed).
    static func leaseLost(_ id: Int64) -> StoreError {
        StoreError(.conflict, "download \(id) is no longer leased to this transfer: it writes nothing more")
    }

    /// The resume record of an item, kept in its row.
    package func recordSlot(_ id: Int64) -> QueueRecordSlot {
        QueueRecordSlot(store: self, id: id)
    }

    /// The record slot of an item just claimed: `load` answers from the claimed row, so starting a
    /// download costs no second trip to the database (a runner loads its record once, at the start).
    ///
    /// Its `remove` leaves a finished record (one with `finishedLength`) in place: the settlement
    /// that marks the item completed forgets it in the same commit (see `apply`). Forgotten one
    /// commit earlier, a process that died between the two would leave an item still `running`
    /// whose file is in place but no longer recognised as its own, and the next run would
    /// download it again only to refuse to replace it.
    package func recordSlot(for item: StoredDownload) -> QueueRecordSlot {
        QueueRecordSlot(store: self, id: item.id, claimed: item.recordText, keepsFinishedRecord: true, epoch: item.leaseEpoch)
    }

    func loadRecord(_ id: Int64) throws(StoreError) -> ResumeRecord? {
        let text: String? = try read { db in
            try db.query("SELECT record FROM downloads WHERE id = ?", [.integer(id)]).first?.string("record")
        }
        return try Self.decodeRecord(text, id: id)
    }

    static func decodeRecord(_ text: String?, id: Int64) throws(StoreError) -> ResumeRecord? {
        guard let text else { return nil }
        return try ResumeRecordCodec.decode(Data(text.utf8), "the resume record of download \(id)")
    }

    func saveRecord(_ id: Int64, _ record: ResumeRecord?, epoch: Int64? = nil) throws(StoreError) {
        let text = try record.map { record throws(StoreError) in SQLiteValue.text(try ResumeRecordCodec.encode(record)) } ?? .null
        let fence = epoch.map(SQLiteValue.integer) ?? .null
        try write(durable: record.map(Self.mustBeDurable) ?? false) { db in
            try db.execute("UPDATE downloads SET record = ? WHERE id = ? AND (? IS NULL OR lease_epoch = ?)", [text, .integer(id), fence, fence])
            if epoch != nil, db.changes == 0 { throw Self.leaseLost(id) }
        }
    }
}

extension QueueStore {
    /// Whether saving `record` must reach the disk before the save returns, though the store's
    /// commits are not synced one by one: a finished mark (the file's rename follows it, and a
    /// power cut that kept the rename and lost the mark would leave a file the next run refuses as
    /// not its own) and an adopted file's record (the user's file is moved under the partial's
    /// name after it). A checkpoint lost to a power cut only makes the store claim fewer bytes.
    static func mustBeDurable(_ record: ResumeRecord) -> Bool {
        record.finishedLength != nil || record.isAdopted
    }

    /// Saves several items' records in one commit (the finished marks of a group of downloads);
    /// each `epoch` fences its item as `saveRecord` does. Returns each one's failure (nil: saved),
    /// in order: a lost lease fails only its own item; a failed commit fails them all.
    func saveRecords(_ records: [(id: Int64, record: ResumeRecord, epoch: Int64?)]) -> [StoreError?] {
        // Encoded before the store is taken: the commit holds it only for the updates.
        let texts = records.map { entry in Result { () throws(StoreError) in SQLiteValue.text(try ResumeRecordCodec.encode(entry.record)) } }
        do throws(StoreError) {
            return try write(durable: records.contains { Self.mustBeDurable($0.record) }) { db -> [StoreError?] in
                var failures: [StoreError?] = []
                for (entry, encoded) in zip(records, texts) {
                    let text: SQLiteValue
                    switch encoded {
                    case .success(let value): text = value
                    case .failure(let error):
                        failures.append(error)
                        continue
                    }
                    let fence = entry.epoch.map(SQLiteValue.integer) ?? .null
                    try db.execute(
                        "UPDATE downloads SET record = ? WHERE id = ? AND (? IS NULL OR lease_epoch = ?)", [text, .integer(entry.id), fence, fence])
                    failures.append(entry.epoch != nil && db.changes == 0 ? Self.leaseLost(entry.id) : nil)
                }
                return failures
            }
        } catch {
            return records.map { _ in error }
        }
    }
}

/// An item's resume record in the queue store: the runner's `ResumeRecordStore` for queued downloads.
package struct QueueRecordSlot: ResumeRecordStore {
    let store: QueueStore
    let id: Int64
    /// The record column as the claim read it (`.some(nil)`: the row had none).
    var claimed: String??
    /// A finished record outlives `remove` until the item's completed settlement clears it.
    let keepsFinishedRecord: Bool
    /// The lease epoch of the claim: a save after the item was leased again is refused.
    let epoch: Int64?

    init(store: QueueStore, id: Int64, claimed: String?? = .none, keepsFinishedRecord: Bool = false, epoch: Int64? = nil) {
        self.store = store
        self.id = id
        self.claimed = claimed
        self.keepsFinishedRecord = keepsFinishedRecord
        self.epoch = epoch
    }

    package func load() throws(StoreError) -> ResumeRecord? {
        if case .some(let text) = claimed {
            return try QueueStore.decodeRecord(text, id: id)
        }
        return try store.loadRecord(id)
    }

    package func save(_ record: ResumeRecord) throws(StoreError) {
        try store.saveRecord(id, record, epoch: epoch)
    }

    package var settlesFinishedRecord: Bool { keepsFinishedRecord }

    package func remove() {
        // A record that cannot be read or cleared here stays: harmless, since a finished record
        // vouches only for a file with the identity it saved, and the completing commit clears it.
        do throws(StoreError) {
            if keepsFinishedRecord, try store.loadRecord(id)?.finishedLength != nil { return }
            try store.saveRecord(id, nil, epoch: epoch)
        } catch {
            return
        }
    }
}
