import Foundation
import HaulCore

// State changes of one item, each through `DownloadLifecycle`, inside a transaction.
extension QueueStore {
    /// Applies a lifecycle input to an item; the action says what its owner must do.
    ///
    /// `owner`: for the end of a transfer, the process that ran it. If its lease was taken over
    /// (it hung past the lease and another process recovered the item), the input is refused with
    /// `.conflict`, so a stale owner never settles an item another process is downloading.
    /// `.start` is refused: only `claimNext` starts an item, because only it takes a lease.
    @discardableResult
    package func apply(
        _ input: LifecycleInput,
        to id: Int64,
        error: (category: String, message: String)? = nil,
        finished: (bytes: Int64, path: String)? = nil,
        owner: LeaseOwner? = nil
    ) throws(StoreError) -> (StoredDownload, LifecycleAction) {
        let settled = try write { db in
            try Self.apply(db, Settlement(id: id, input: input, error: error, finished: finished), owner: owner)
        }
        if settled.removedSecrets { noteSecretsRemoved() }
        return (settled.item, settled.action)
    }

    /// The end of one transfer, applied together with the next claim (see `claimNext`).
    package typealias Settlement = QueueSettlement

    /// Applies `change` in `db`'s transaction; `removedSecrets`: the item settled for good and
    /// held something its scrub took out.
    static func apply(
        _ db: SQLiteConnection, _ change: Settlement, owner: LeaseOwner?
    ) throws -> (item: StoredDownload, action: LifecycleAction, removedSecrets: Bool) {
        let id = change.id
        guard var item = try load(db, id: id) else {
            throw StoreError(.notFound, "no download \(id) in the queue")
        }
        let (action, releasesLease) = try change.settle(
            &item, owner: owner, leaseOwner: { try leaseOwner(db, id) }, leaseEpoch: { try leaseEpoch(db, id) })
        let next = item.state
        try db.execute(
            """
            UPDATE downloads SET state = ?, last_error = ?, error_category = ?, updated_at = ?,
                lease_owner = CASE WHEN ? THEN NULL ELSE lease_owner END,
                lease_expires = CASE WHEN ? THEN NULL ELSE lease_expires END, not_before = ?
            WHERE id = ?
            """,
            [
                .text(next.rawValue), item.lastError.map(SQLiteValue.text) ?? .null, item.errorCategory.map(SQLiteValue.text) ?? .null,
                .real(Date().timeIntervalSince1970), .init(releasesLease), .init(releasesLease),
                change.retryAfter.map { .real(Date().timeIntervalSince1970 + $0) } ?? .null, .integer(id),
            ])
        let removedSecrets =
            next == .completed || next == .cancelled ? try scrubSecrets(db, item, droppingRecord: change.finished != nil) : false
        if let finished = change.finished {
            // A completed download: its final size and place, and no record left to resume from (its
            // finished record is forgotten here, in the commit that completes it: see `recordSlot(for:)`).
            try db.execute(
                "UPDATE downloads SET bytes = ?, total_bytes = ?, speed = 0, final_path = ?, record = NULL WHERE id = ?",
                [.integer(finished.bytes), .integer(finished.bytes), .text(finished.path), .integer(id)])
        }
        return (item, action, removedSecrets)
    }

    /// A download settled for good (completed, cancelled) keeps nothing it was given only to run
    /// (see `SecretScrub`); secure_delete overwrites the old values. Returns whether anything was
    /// taken out, so that the earlier copies in the write-ahead log are forgotten soon.
    @discardableResult
    static func scrubSecrets(_ db: SQLiteConnection, _ item: StoredDownload, droppingRecord: Bool = false) throws -> Bool {
        let scrub = SecretScrub(item, droppingRecord: droppingRecord)
        guard scrub.removesSomething else { return false }
        let options = try scrub.options.map { options throws(StoreError) in SQLiteValue.text(try options.encoded()) } ?? .null
        let record = try scrub.record.map { record throws(StoreError) in SQLiteValue.text(try ResumeRecordCodec.encode(record)) } ?? .null
        try db.execute(
            "UPDATE downloads SET headers = '[]', body = NULL, url = COALESCE(?, url), options = ?, record = ? WHERE id = ?",
            [scrub.url.map(SQLiteValue.text) ?? .null, options, record, .integer(item.id)])
        return true
    }

    private static func leaseOwner(_ db: SQLiteConnection, _ id: Int64) throws -> String? {
        try db.query("SELECT lease_owner FROM downloads WHERE id = ?", [.integer(id)]).first?.string("lease_owner")
    }

    private static func leaseEpoch(_ db: SQLiteConnection, _ id: Int64) throws -> Int64? {
        try db.query("SELECT lease_epoch FROM downloads WHERE id = ?", [.integer(id)]).first?.int64("lease_epoch")
    }

    /// Removes a settled item (and its record). A running item must be cancelled first.
    package func remove(_ id: Int64) throws(StoreError) {
        try write { db in
            guard let item = try Self.load(db, id: id) else {
                throw StoreError(.notFound, "no download \(id) in the queue")
            }
            guard item.state.isSettled || item.state == .queued else {
                throw StoreError(.conflict, "download \(id) is \(item.state.rawValue); cancel or pause it first")
            }
            try db.execute("DELETE FROM downloads WHERE id = ?", [.integer(id)])
        }
        noteSecretsRemoved()
    }
}
