import Foundation
import HaulCore

// Claims, lease renewal and the recovery of items whose owner died.
extension QueueStore {
    /// Settles the transfers `owner` just finished, returns items whose owner died to where they
    /// meant to go (running → queued, pausing → paused, cancelling → cancelled; on the first claim,
    /// then at most every 2 s per store: `recoveryThrottle`), then claims the best queued item for
    /// `owner` — all in one transaction. `among` limits the choice to some items (a batch runs only
    /// its own). A settlement this owner may no longer make (its lease was taken over) is skipped.
    /// `rules`: a claim skips items of a host that already has `maxPerHost` items in a transfer state.
    package func claimNext(
        for owner: LeaseOwner, among ids: Set<Int64>? = nil, settling settlements: [Settlement] = [], rules: ClaimRules = ClaimRules()
    ) throws(StoreError) -> StoredDownload? {
        let recover = recoveryThrottle.withLock { $0.takeIfDue(now: .now) }
        let (claimed, removedSecrets) = try write { db -> (StoredDownload?, Bool) in
            var removedSecrets = false
            for settlement in settlements {
                do {
                    removedSecrets = try Self.apply(db, settlement, owner: owner).removedSecrets || removedSecrets
                } catch let error as StoreError where error.kind == .conflict || error.kind == .notFound {
                    continue
                }
            }
            if recover { removedSecrets = try Self.recoverAbandoned(db) || removedSecrets }
            // Settling only (a draining or waiting worker): nothing to look for.
            if let ids, ids.isEmpty { return (nil, removedSecrets) }
            return (try Self.claimBest(db, for: owner, among: ids, rules: rules), removedSecrets)
        }
        if removedSecrets { noteSecretsRemoved() }
        return claimed
    }

    /// Claims the best queued item (among `ids`, if given) for `owner`.
    private static func claimBest(_ db: SQLiteConnection, for owner: LeaseOwner, among ids: Set<Int64>?, rules: ClaimRules) throws -> StoredDownload? {
        // Page through the queued items best first; a batch (`among`) usually finds its own in the
        // first rows, so the first page is short (each row read is work for every claim).
        var offset: Int64 = 0
        var fullHosts: Set<String> = []
        let now = Date().timeIntervalSince1970
        while true {
            let page = try db.query(
                """
                SELECT id, host FROM downloads WHERE state = 'queued' AND (not_before IS NULL OR not_before <= ?)
                ORDER BY priority DESC, id LIMIT ? OFFSET ?
                """, [.real(now), .integer(offset == 0 ? 8 : 64), .integer(offset)])
            if page.isEmpty { break }
            offset += Int64(page.count)
            for row in page {
                guard let id = row.int64("id"), ids?.contains(id) ?? true else { continue }
                if let limit = rules.maxPerHost {
                    let host = row.string("host") ?? ""
                    if fullHosts.contains(host) { continue }
                    let busy = try db.query(
                        "SELECT count(*) FROM downloads WHERE host = ? AND state IN ('running', 'pausing', 'cancelling')", [.text(host)])
                    if (busy.first?[0].int64 ?? 0) >= Int64(limit) {
                        fullHosts.insert(host)
                        continue
                    }
                }
                try db.execute(
                    """
                    UPDATE downloads SET state = 'running', lease_owner = ?, lease_expires = ?, updated_at = ?,
                        last_error = NULL, error_category = NULL, attempts = attempts + 1, lease_epoch = lease_epoch + 1, not_before = NULL
                    WHERE id = ? AND state = 'queued'
                    """, [.text(owner.encoded), .real(now + leaseSeconds), .real(now), .integer(id)])
                guard db.changes == 1 else { continue }
                return try load(db, id: id)
            }
        }
        return nil
    }

    /// Extends the leases `owner` holds on the items of `leases` (id and epoch: those it knows it
    /// holds) and reports the state of each, so a pause or cancel requested by another process
    /// reaches the running transfer. A row leased to `owner` that it does not know of is not renewed.
    package func renewLeases(for owner: LeaseOwner, holding leases: [Int64: Int64]) throws(StoreError) -> [Int64: DownloadState] {
        guard !leases.isEmpty else { return [:] }
        return try write { db in
            let expires = Date().timeIntervalSince1970 + Self.leaseSeconds
            var states: [Int64: DownloadState] = [:]
            for (id, epoch) in leases.sorted(by: { $0.key < $1.key }) {
                let rows = try db.query(
                    "UPDATE downloads SET lease_expires = ? WHERE id = ? AND lease_owner = ? AND lease_epoch = ? RETURNING state",
                    [.real(expires), .integer(id), .text(owner.encoded), .integer(epoch)])
                if let state = rows.first?.string("state").flatMap(DownloadState.init(rawValue:)) { states[id] = state }
            }
            return states
        }
    }

    /// Whether any item is queued or in a transfer state (running, pausing, cancelling), whatever
    /// became of its owner: abandoned items count until a claim recovers them.
    package func hasPendingWork(among ids: Set<Int64>? = nil) throws(StoreError) -> Bool {
        try read { db in
            let rows = try db.query("SELECT id FROM downloads WHERE state IN ('queued', 'running', 'pausing', 'cancelling')")
            return rows.contains { row in row.int64("id").map { ids?.contains($0) ?? true } ?? false }
        }
    }

    /// Returns the items whose owner died (or whose lease expired) to where they meant to go. A
    /// row whose state cannot be read (not one Haul writes) is looked at too, since no owner can
    /// settle it: once it has no live lease it is failed with the reason, as `items()` shows it,
    /// and recovery goes on with the others. Returns whether a settled item's secrets were removed.
    private static func recoverAbandoned(_ db: SQLiteConnection) throws -> Bool {
        var removedSecrets = false
        let now = Date().timeIntervalSince1970
        let atRest = DownloadState.allCases.filter { !$0.hasTransfer }.map { "'\($0.rawValue)'" }.joined(separator: ", ")
        let rows = try db.query(
            "SELECT id, state, lease_owner, lease_expires FROM downloads WHERE state IS NULL OR state NOT IN (\(atRest))")
        for row in rows {
            // The INTEGER PRIMARY KEY (the rowid): SQLite keeps nothing but an integer there.
            guard let id = row.int64("id") else { continue }
            let owner = row.string("lease_owner").flatMap(LeaseOwner.init(encoded:))
            let expired = (row.double("lease_expires") ?? 0) < now
            guard expired || !(owner?.isAlive ?? false) else { continue }
            guard let state = row.string("state").flatMap(DownloadState.init(rawValue:)) else {
                try failUnreadable(db, id, now: now)
                continue
            }
            guard case .success(let (next, _)) = DownloadLifecycle.apply(.ownerLost, to: state) else { continue }
            try db.execute(
                "UPDATE downloads SET state = ?, lease_owner = NULL, lease_expires = NULL, updated_at = ? WHERE id = ?",
                [.text(next.rawValue), .real(now), .integer(id)])
            // A cancellation its owner did not live to finish settles here, for good.
            if next == .cancelled || next == .completed, let item = try load(db, id: id) {
                removedSecrets = try scrubSecrets(db, item) || removedSecrets
            }
        }
        return removedSecrets
    }

    /// Fails an item whose state cannot be read, with what `StoredDownload.damage` says of its row.
    private static func failUnreadable(_ db: SQLiteConnection, _ id: Int64, now: Double) throws {
        let reason = try load(db, id: id)?.damage?.reason ?? "its stored state is damaged"
        try db.execute(
            """
            UPDATE downloads SET state = 'failed', last_error = ?, error_category = 'io', lease_owner = NULL, lease_expires = NULL,
                updated_at = ? WHERE id = ?
            """, [.text("download \(id): \(reason); remove it and add it again"), .real(now), .integer(id)])
    }
}
