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
        _ input: LifecycleInput, to id: Int64, error: (category: String, message: String)? = nil, finished: (bytes: Int64, path: String)? = nil,
        owner: LeaseOwner? = nil
    ) throws(StoreError) -> (StoredDownload, LifecycleAction) {
        let settled = try database.write { db in
            try apply(db, QueueSettlement(id: id, input: input, error: error, finished: finished), owner: owner)
        }
        if settled.removedSecrets { database.noteSecretsRemoved() }
        return (settled.item, settled.action)
    }

    /// Applies `change` in `db`'s transaction, the row locked first (PostgreSQL: `FOR UPDATE`), so
    /// the checks of its lease and the write are one step another worker cannot come between.
    /// `loaded`: the row as this transaction read and locked it already.
    /// `removedSecrets`: the item settled for good and held something its scrub took out.
    func apply(
        _ db: any StoreConnection, _ change: QueueSettlement, owner: LeaseOwner?, loaded: StoredDownload? = nil
    ) throws -> (item: StoredDownload, action: LifecycleAction, removedSecrets: Bool) {
        let id = change.id
        guard var item = try loaded ?? load(db, id: id, locking: true) else {
            throw StoreError(.notFound, "no download \(id) in the queue")
        }
        // The row's lease as locked, read with it: the checks need no statement of their own.
        let (action, releasesLease) = try change.settle(&item, owner: owner)
        let next = item.state
        try db.run(
            dialect.settle,
            [
                .text(next.rawValue), item.lastError.map(StoreValue.text) ?? .null, item.errorCategory.map(StoreValue.text) ?? .null,
                StoreValue(releasesLease), change.retryAfter.map(StoreValue.real) ?? .null, .integer(id),
                // A completed download: its final size and place, and no record left to resume from
                // (its finished record is forgotten here, in the commit that completes it: see
                // `resumeRecord(for:)`).
                change.finished.map { .integer($0.bytes) } ?? .null, change.finished.map { .text($0.path) } ?? .null,
            ])
        let removedSecrets =
            next == .completed || next == .cancelled ? try scrubSecrets(db, item, droppingRecord: change.finished != nil) : false
        return (item, action, removedSecrets)
    }

    /// A download settled for good (completed, cancelled) keeps nothing it was given only to run
    /// (see `SecretScrub`); SQLite's secure_delete overwrites the old values (a shared store never
    /// received any, see `SharedStoreRule`, but a row written by hand might hold one). Returns
    /// whether anything was taken out, so that the earlier copies are forgotten soon.
    @discardableResult
    func scrubSecrets(_ db: any StoreConnection, _ item: StoredDownload, droppingRecord: Bool = false) throws -> Bool {
        let scrub = SecretScrub(item, droppingRecord: droppingRecord)
        guard scrub.removesSomething else { return false }
        let options = try scrub.options.map { options throws(StoreError) in StoreValue.text(try options.encoded()) } ?? .null
        let record = try scrub.record.map { record throws(StoreError) in StoreValue.text(try ResumeRecordCodec.encode(record)) } ?? .null
        try db.run(dialect.scrub, [scrub.url.map(StoreValue.text) ?? .null, options, record, .integer(item.id)])
        return true
    }

    /// Removes a settled (or queued) item (and its record). A running item must be cancelled first.
    package func remove(_ id: Int64) throws(StoreError) {
        try database.transaction(durable: false) { db, rerun in
            guard let item = try load(db, id: id, locking: true) else {
                // Run again after a lost COMMIT reply, the removal finds the row its first run
                // deleted gone: that is its own success, not "no such download".
                if rerun { return }
                throw StoreError(.notFound, "no download \(id) in the queue")
            }
            guard item.state.isSettled || item.state == .queued else {
                throw StoreError(.conflict, "download \(id) is \(item.state.rawValue); cancel or pause it first")
            }
            try db.run(dialect.delete, [.integer(id)])
        }
        database.noteSecretsRemoved()
    }
}
