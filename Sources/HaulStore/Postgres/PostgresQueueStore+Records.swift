import Foundation
import HaulCore

// Progress and the resume record, kept in the item's row and fenced by the lease's epoch.
extension PostgresQueueStore: QueueStorage {
    package var isShared: Bool { true }

    /// Progress is written only when the connection is up and free (a report is due every
    /// second anyway): a transfer never waits for the database on its account.
    package func updateProgress(
        _ id: Int64, bytes: Int64, totalBytes: Int64?, bytesPerSecond: Double, finalPath: String?, epoch: Int64? = nil
    ) throws(StoreError) {
        do {
            _ = try database.transactionIfIdle { db in try writeProgress(db, id, bytes, totalBytes, bytesPerSecond, finalPath, epoch) }
        } catch {
            throw storeError(error)
        }
    }

    private func writeProgress(
        _ db: PGConnection, _ id: Int64, _ bytes: Int64, _ totalBytes: Int64?, _ bytesPerSecond: Double, _ finalPath: String?, _ epoch: Int64?
    ) throws {
        let result = try db.query(
            """
            UPDATE downloads SET bytes = $1, total_bytes = $2, speed = $3, final_path = COALESCE($4, final_path),
                updated_at = extract(epoch FROM clock_timestamp())
            WHERE id = $5 AND ($6::bigint IS NULL OR lease_epoch = $6::bigint)
            """,
            [String(bytes), totalBytes.map(String.init), String(bytesPerSecond), finalPath, String(id), epoch.map(String.init)])
        if epoch != nil, result.affected == 0 { throw QueueStore.leaseLost(id) }
    }

    package func resumeRecord(_ id: Int64) -> any ResumeRecordStore {
        PostgresRecordSlot(store: self, id: id, claimed: .none, keepsFinishedRecord: false, epoch: nil)
    }

    package func resumeRecord(for item: StoredDownload) -> any ResumeRecordStore {
        PostgresRecordSlot(store: self, id: item.id, claimed: item.recordText, keepsFinishedRecord: true, epoch: item.leaseEpoch)
    }

    func loadRecord(_ id: Int64) throws(StoreError) -> ResumeRecord? {
        let text: String? = try transaction { db in
            try db.query("SELECT record FROM downloads WHERE id = $1", [String(id)]).rows.first?.string("record")
        }
        return try QueueStore.decodeRecord(text, id: id)
    }

    func saveRecord(_ id: Int64, _ record: ResumeRecord?, epoch: Int64?) throws(StoreError) {
        let text = try record.map { record throws(StoreError) in try ResumeRecordCodec.encode(record) }
        try transaction { db in
            let result = try db.query(
                "UPDATE downloads SET record = $1 WHERE id = $2 AND ($3::bigint IS NULL OR lease_epoch = $3::bigint)",
                [text, String(id), epoch.map(String.init)])
            if epoch != nil, result.affected == 0 { throw QueueStore.leaseLost(id) }
        }
    }

    /// Nothing to truncate: the store never receives a secret (see `SharedStoreRule`).
    package func forgetRemovedSecrets() {}

    /// Nothing to truncate (see `forgetRemovedSecrets`).
    package func forgetRemovedSecretsSoon() {}

    /// Waits for a `NOTIFY` on `haul_queue` (an item became queued on any machine), `seconds` at most.
    package func waitForWork(seconds: Double) {
        listener.wait(seconds: seconds)
    }

    package func wakeWaiters() {
        listener.wakeAll()
    }
}

/// An item's resume record in the PostgreSQL store, fenced by the epoch of the claim.
struct PostgresRecordSlot: ResumeRecordStore {
    let store: PostgresQueueStore
    let id: Int64
    /// The record column as the claim read it (`.some(nil)`: the row had none).
    let claimed: String??
    /// A finished record outlives `remove` until the item's completed settlement clears it.
    let keepsFinishedRecord: Bool
    let epoch: Int64?

    func load() throws(StoreError) -> ResumeRecord? {
        if case .some(let text) = claimed { return try QueueStore.decodeRecord(text, id: id) }
        return try store.loadRecord(id)
    }

    func save(_ record: ResumeRecord) throws(StoreError) {
        try store.saveRecord(id, record, epoch: epoch)
    }

    var settlesFinishedRecord: Bool { keepsFinishedRecord }

    func remove() {
        do throws(StoreError) {
            if keepsFinishedRecord, try store.loadRecord(id)?.finishedLength != nil { return }
            try store.saveRecord(id, nil, epoch: epoch)
        } catch {
            return
        }
    }
}
