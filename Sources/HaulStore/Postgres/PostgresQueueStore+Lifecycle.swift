import Foundation
import HaulCore

// State changes of one item, each through `DownloadLifecycle`, inside a transaction.
extension PostgresQueueStore {
    /// Applies a lifecycle input to an item (see `QueueStore.apply`); with `owner`, only while
    /// the item is still leased to it.
    @discardableResult
    package func apply(
        _ input: LifecycleInput, to id: Int64, error: (category: String, message: String)? = nil, finished: (bytes: Int64, path: String)? = nil,
        owner: LeaseOwner? = nil
    ) throws(StoreError) -> (StoredDownload, LifecycleAction) {
        let settled = try transaction { db in
            try Self.apply(db, QueueSettlement(id: id, input: input, error: error, finished: finished), owner: owner)
        }
        return (settled.item, settled.action)
    }

    /// Applies `change` in `db`'s transaction, the row locked first (`FOR UPDATE`), so the checks
    /// of its lease and the write are one step another worker cannot come between.
    static func apply(_ db: PGConnection, _ change: QueueSettlement, owner: LeaseOwner?) throws -> (item: StoredDownload, action: LifecycleAction) {
        let id = change.id
        guard var item = try load(db, id: id, locking: true) else {
            throw StoreError(.notFound, "no download \(id) in the queue")
        }
        let epoch = item.leaseEpoch
        let (action, releasesLease) = try change.settle(
            &item, owner: owner,
            leaseOwner: { try db.query("SELECT lease_owner FROM downloads WHERE id = $1", [String(id)]).rows.first?.string("lease_owner") },
            leaseEpoch: { epoch })
        let next = item.state
        try db.query(
            """
            UPDATE downloads SET state = $1, last_error = $2, error_category = $3, updated_at = extract(epoch FROM clock_timestamp()),
                lease_owner = CASE WHEN $4::boolean THEN NULL ELSE lease_owner END,
                lease_worker = CASE WHEN $4::boolean THEN NULL ELSE lease_worker END,
                lease_expires = CASE WHEN $4::boolean THEN NULL ELSE lease_expires END,
                not_before = now() + make_interval(secs => $5::double precision)
            WHERE id = $6
            """,
            [next.rawValue, item.lastError, item.errorCategory, releasesLease ? "true" : "false", change.retryAfter.map { String($0) }, String(id)])
        if next == .completed || next == .cancelled { try scrubSecrets(db, item, droppingRecord: change.finished != nil) }
        if let finished = change.finished {
            try db.query(
                "UPDATE downloads SET bytes = $1, total_bytes = $1, speed = 0, final_path = $2, record = NULL WHERE id = $3",
                [String(finished.bytes), finished.path, String(id)])
        }
        return (item, action)
    }

    /// What the SQLite store scrubs, scrubbed here too. A shared store never received a secret
    /// (`SharedStoreRule`), so this normally finds nothing; a row written by hand might hold one.
    static func scrubSecrets(_ db: PGConnection, _ item: StoredDownload, droppingRecord: Bool = false) throws {
        let scrub = SecretScrub(item, droppingRecord: droppingRecord)
        guard scrub.removesSomething else { return }
        let options = try scrub.options.map { options throws(StoreError) in try options.encoded() }
        let record = try scrub.record.map { record throws(StoreError) in try ResumeRecordCodec.encode(record) }
        try db.query(
            "UPDATE downloads SET headers = '[]', body = NULL, url = COALESCE($1, url), options = $2, record = $3 WHERE id = $4",
            [scrub.url, options, record, String(item.id)])
    }

    /// Removes a settled (or queued) item.
    package func remove(_ id: Int64) throws(StoreError) {
        // Run again after a lost COMMIT reply, the removal finds the row its first run deleted
        // gone: that is its own success, not "no such download".
        var runs = 0
        try transaction { db in
            runs += 1
            guard let item = try Self.load(db, id: id, locking: true) else {
                if runs > 1 { return }
                throw StoreError(.notFound, "no download \(id) in the queue")
            }
            guard item.state.isSettled || item.state == .queued else {
                throw StoreError(.conflict, "download \(id) is \(item.state.rawValue); cancel or pause it first")
            }
            try db.query("DELETE FROM downloads WHERE id = $1", [String(id)])
        }
    }
}
