import Foundation
import HaulCore

// Progress figures and the resume record, both kept in the item's row and fenced by the lease.
extension QueueStore {
    /// Records the progress of a running item, only while `lease` is still the item's: refused
    /// with `.conflict` once it was leased again. Progress is written only when the database is
    /// free (a report is due every second anyway): a transfer never waits on its account.
    package func updateProgress(_ lease: Lease, bytes: Int64, totalBytes: Int64?, bytesPerSecond: Double, finalPath: String?) throws(StoreError) {
        let id = lease.item
        _ = try database.transactionIfIdle { db in
            let changed = try db.run(
                dialect.progress,
                [
                    .integer(bytes), totalBytes.map(StoreValue.integer) ?? .null, .real(bytesPerSecond), finalPath.map(StoreValue.text) ?? .null,
                    .integer(id), .integer(lease.epoch),
                ])
            if changed == 0 { throw Self.leaseLost(id) }
        }
    }

    /// The resume record of an item, outside any lease (removing a partial).
    package func resumeRecord(_ id: Int64) -> any ResumeRecordStore {
        QueueRecordSlot(store: self, id: id, claimed: .none, keepsFinishedRecord: false, lease: nil)
    }

    /// The record slot of an item just claimed by `owner`, fenced by its lease: `load` answers
    /// from the claimed row, so starting a download costs no second trip to the database (a
    /// runner loads its record once, at the start).
    ///
    /// Its `remove` leaves a finished record (one with `finishedLength`) in place: the settlement
    /// that marks the item completed forgets it in the same commit (see `apply`). Forgotten one
    /// commit earlier, a process that died between the two would leave an item still `running`
    /// whose file is in place but no longer recognised as its own, and the next run would
    /// download it again only to refuse to replace it.
    package func resumeRecord(for item: StoredDownload, owner: LeaseOwner) -> any ResumeRecordStore {
        QueueRecordSlot(store: self, id: item.id, claimed: .some(item.recordText), keepsFinishedRecord: true, lease: item.lease(for: owner))
    }

    func loadRecord(_ id: Int64) throws(StoreError) -> ResumeRecord? {
        let text: String? = try database.read { db in try db.row(dialect.loadRecord, [.integer(id)])?.string("record") }
        return try Self.decodeRecord(text, id: id)
    }

    func saveRecord(_ id: Int64, _ record: ResumeRecord?, lease: Lease?) throws(StoreError) {
        guard let error = saveRecords([(id, record, lease)]).first, let error else { return }
        throw error
    }

    /// Whether saving `record` must reach the disk before the save returns, though the store's
    /// commits are not synced one by one: a finished mark (the file's rename follows it, and a
    /// power cut that kept the rename and lost the mark would leave a file the next run refuses as
    /// not its own) and an adopted file's record (the user's file is moved under the partial's
    /// name after it). A checkpoint lost to a power cut only makes the store claim fewer bytes.
    static func mustBeDurable(_ record: ResumeRecord) -> Bool {
        record.finishedLength != nil || record.isAdopted
    }

    /// Saves several items' records (nil: forgets it) in one commit (the finished marks of a group
    /// of downloads); each `lease` fences its item (nil: outside any lease). Returns each one's
    /// failure (nil: saved), in order: a lost lease fails only its own item; a failed commit fails
    /// them all.
    func saveRecords(_ records: [(id: Int64, record: ResumeRecord?, lease: Lease?)]) -> [StoreError?] {
        // Encoded before the store is taken: the commit holds it only for the updates.
        let texts = records.map { entry in
            Result { () throws(StoreError) -> StoreValue in
                guard let record = entry.record else { return .null }
                return .text(try ResumeRecordCodec.encode(record))
            }
        }
        // Every record there and encoded, several: one statement for them all.
        let encoded = texts.compactMap { try? $0.get() }.compactMap(\.string)
        let together = records.count > 1 && encoded.count == records.count
        let durable = records.contains { $0.record.map(Self.mustBeDurable) ?? false }
        do throws(StoreError) {
            return try database.write(durable: durable) { db -> [StoreError?] in
                var written: Set<Int64>?
                if together {
                    let rows = try db.rows(
                        dialect.saveRecords,
                        [.integers(records.map(\.id)), .texts(encoded), .integers(records.map { $0.lease?.epoch ?? -1 })])
                    written = Set(rows.compactMap { $0.int64("id") })
                }
                var failures: [StoreError?] = []
                for (entry, encoded) in zip(records, texts) {
                    let changed: Int
                    if let written {
                        changed = written.contains(entry.id) ? 1 : 0
                    } else {
                        let text: StoreValue
                        switch encoded {
                        case .success(let value): text = value
                        case .failure(let error):
                            failures.append(error)
                            continue
                        }
                        let fence = entry.lease.map { StoreValue.integer($0.epoch) } ?? .null
                        changed = try db.run(dialect.saveRecord, [text, .integer(entry.id), fence])
                    }
                    failures.append(entry.lease != nil && changed == 0 ? Self.leaseLost(entry.id) : nil)
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
    let claimed: String??
    /// A finished record outlives `remove` until the item's completed settlement clears it.
    let keepsFinishedRecord: Bool
    /// The lease of the claim: a save after the item was leased again is refused.
    let lease: Lease?

    package func load() throws(StoreError) -> ResumeRecord? {
        if case .some(let text) = claimed {
            return try QueueStore.decodeRecord(text, id: id)
        }
        return try store.loadRecord(id)
    }

    package func save(_ record: ResumeRecord) throws(StoreError) {
        try store.saveRecord(id, record, lease: lease)
    }

    package var settlesFinishedRecord: Bool { keepsFinishedRecord }

    package func remove() {
        // A record that cannot be read or cleared here stays: harmless, since a finished record
        // vouches only for a file with the identity it saved, and the completing commit clears it.
        do throws(StoreError) {
            if keepsFinishedRecord, try store.loadRecord(id)?.finishedLength != nil { return }
            try store.saveRecord(id, nil, lease: lease)
        } catch {
            return
        }
    }
}
