import Foundation
import HaulCore

// Claims, heartbeats and the rescue of items whose lease expired.
extension PostgresQueueStore {
    /// Settles `settlements` (each only if its lease is still the one it names), returns items
    /// whose lease expired to where they meant to go (at most every second per process, see
    /// `recoveryThrottle`), then claims the best queued item for `owner` in one statement: one
    /// transaction in all.
    package func claimNext(
        for owner: LeaseOwner, among ids: Set<Int64>? = nil, settling settlements: [QueueSettlement] = [], rules: ClaimRules = ClaimRules()
    ) throws(StoreError) -> StoredDownload? {
        let recover = recoveryThrottle.withLock { $0.takeIfDue(now: .now) }
        // The token this claim leaves on the row it leases. A transaction run again after its
        // connection was lost may have committed the first time (the COMMIT reached the server,
        // its reply did not): the second run then finds the row it leased by this token and
        // returns it, rather than leasing another and stranding the first.
        let token = UUID().uuidString
        var runs = 0
        return try transaction { db -> StoredDownload? in
            runs += 1
            if runs > 1, let earlier = try claimedEarlier(db, by: owner, token: token) { return earlier }
            for settlement in settlements {
                do {
                    _ = try Self.apply(db, settlement, owner: owner)
                } catch let error as StoreError where error.kind == .conflict || error.kind == .notFound {
                    continue
                }
            }
            if recover { try Self.recoverExpired(db) }
            if let ids, ids.isEmpty { return nil }
            return try claimBest(db, for: owner, among: ids, rules: rules, token: token)
        }
    }

    /// The row a first run of this claim leased and committed, if it did: looked for only when the
    /// claim runs again, among the owner's few leased rows (the `downloads_leased` index).
    private func claimedEarlier(_ db: PGConnection, by owner: LeaseOwner, token: String) throws -> StoredDownload? {
        try db.query(
            "SELECT * FROM downloads WHERE lease_owner = $1 AND claim_token = $2 AND state IN (\(Self.transferStates))", [owner.encoded, token]
        ).rows.first.map(Self.decode)
    }

    /// The claim: one statement, `WITH … FOR UPDATE SKIP LOCKED … UPDATE … RETURNING`, that leases
    /// the best queued row it can lock (rows another worker is claiming are passed over, never
    /// waited for). With a per-host limit, see `claimLimited`.
    private func claimBest(_ db: PGConnection, for owner: LeaseOwner, among ids: Set<Int64>?, rules: ClaimRules, token: String) throws
        -> StoredDownload?
    {
        if let limit = rules.maxPerHost { return try claimLimited(db, for: owner, among: ids, limit: limit, token: token) }
        let rows = try db.query(
            """
            WITH candidate AS (
                SELECT d.id FROM downloads d
                WHERE d.state = 'queued' AND (d.not_before IS NULL OR d.not_before <= now())
                    AND ($5::bigint[] IS NULL OR d.id = ANY ($5::bigint[]))
                ORDER BY d.priority DESC, d.id LIMIT 1
                FOR UPDATE OF d SKIP LOCKED
            )
            UPDATE downloads SET \(Self.leaseColumns)
            FROM candidate WHERE downloads.id = candidate.id
            RETURNING downloads.*
            """,
            [owner.encoded, workerName(owner), String(leaseSeconds), token, Self.idArray(ids)]
        ).rows
        return try rows.first.map(Self.decode)
    }

    /// With a per-host limit: the best queued item is locked together with its host's row
    /// (`SKIP LOCKED`: a host another worker is claiming for is passed over), then leased by an
    /// UPDATE that counts the host's transfers itself. That count is a statement begun after the
    /// host's lock was taken, so it sees every claim of the host committed before (READ
    /// COMMITTED): two workers never both take a host's last slot. A full host is left out and the
    /// next best item tried, in the same transaction.
    private func claimLimited(_ db: PGConnection, for owner: LeaseOwner, among ids: Set<Int64>?, limit: Int, token: String) throws
        -> StoredDownload?
    {
        var fullHosts: [String] = []
        while true {
            let hostsArray =
                "{"
                + fullHosts.map { "\"" + $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
                .joined(separator: ",") + "}"
            guard
                let candidate = try db.query(
                    """
                    SELECT d.id, d.host FROM downloads d JOIN host_slots h ON h.host = d.host
                    WHERE d.state = 'queued' AND (d.not_before IS NULL OR d.not_before <= now())
                        AND ($1::bigint[] IS NULL OR d.id = ANY ($1::bigint[])) AND NOT (d.host = ANY ($2::text[]))
                    ORDER BY d.priority DESC, d.id LIMIT 1
                    FOR UPDATE OF d, h SKIP LOCKED
                    """, [Self.idArray(ids), hostsArray]
                ).rows.first, let id = candidate.int64("id"), let host = candidate.string("host")
            else { return nil }
            let claimed = try db.query(
                """
                UPDATE downloads SET \(Self.leaseColumns)
                WHERE id = $5 AND (SELECT count(*) FROM downloads r WHERE r.host = $6 AND r.state IN (\(Self.transferStates))) < $7
                RETURNING *
                """, [owner.encoded, workerName(owner), String(leaseSeconds), token, String(id), host, String(limit)]
            ).rows.first
            if let claimed { return try Self.decode(claimed) }
            fullHosts.append(host)
        }
    }

    /// What a claim sets: `$1` the owner, `$2` the worker's name, `$3` the lease in seconds, `$4`
    /// the claim's token.
    static let leaseColumns = """
        state = 'running', lease_owner = $1, lease_worker = $2, claim_token = $4,
            lease_expires = now() + make_interval(secs => $3::double precision), lease_epoch = lease_epoch + 1,
            attempts = attempts + 1, last_error = NULL, error_category = NULL, not_before = NULL,
            updated_at = extract(epoch FROM clock_timestamp())
        """

    /// Extends the leases `owner` holds on the items of `leases` (id and epoch: those it knows it
    /// holds) and reports the state of each. A row leased to `owner` that it does not know of (a
    /// claim whose reply was lost) is never renewed: it expires and is rescued.
    package func renewLeases(for owner: LeaseOwner, holding leases: [Int64: Int64]) throws(StoreError) -> [Int64: DownloadState] {
        guard !leases.isEmpty else { return [:] }
        let ids = leases.keys.sorted()
        return try transaction { db in
            let rows = try db.query(
                """
                UPDATE downloads SET lease_expires = now() + make_interval(secs => $2::double precision)
                FROM unnest($3::bigint[], $4::bigint[]) AS held (id, epoch)
                WHERE downloads.lease_owner = $1 AND downloads.id = held.id AND downloads.lease_epoch = held.epoch
                RETURNING downloads.id, downloads.state
                """,
                [
                    owner.encoded, String(leaseSeconds), "{" + ids.map(String.init).joined(separator: ",") + "}",
                    "{" + ids.map { String(leases[$0] ?? 0) }.joined(separator: ",") + "}",
                ]
            ).rows
            var states: [Int64: DownloadState] = [:]
            for row in rows {
                if let id = row.int64("id"), let state = row.string("state").flatMap(DownloadState.init(rawValue:)) { states[id] = state }
            }
            return states
        }
    }

    /// Counted by the database: a fleet's queue may hold millions of rows.
    package func pendingCount() throws(StoreError) -> Int {
        try transaction { db in
            let row = try db.query("SELECT count(*) AS n FROM downloads WHERE state IN ('queued', \(Self.transferStates))").rows.first
            return Int(row?.int64("n") ?? 0)
        }
    }

    package func hasPendingWork(among ids: Set<Int64>? = nil) throws(StoreError) -> Bool {
        try transaction { db in
            let row = try db.query(
                """
                SELECT EXISTS (SELECT 1 FROM downloads WHERE state IN ('queued', \(Self.transferStates))
                    AND ($1::bigint[] IS NULL OR id = ANY ($1::bigint[]))) AS pending
                """, [Self.idArray(ids)]
            ).rows.first
            return row?.int64("pending") == 1
        }
    }

    /// Returns the items whose lease expired (by the server's clock) to where they meant to go,
    /// as `DownloadLifecycle` says for `.ownerLost`; a cancellation no one lived to finish settles,
    /// and its item loses what `SecretScrub` takes out.
    static func recoverExpired(_ db: PGConnection) throws {
        let cases = DownloadState.allCases.filter(\.hasTransfer).compactMap { state -> String? in
            guard case .success(let (next, _)) = DownloadLifecycle.apply(.ownerLost, to: state) else { return nil }
            return "WHEN '\(state.rawValue)' THEN '\(next.rawValue)'"
        }
        let rows = try db.query(
            """
            UPDATE downloads SET state = CASE state \(cases.joined(separator: " ")) ELSE state END,
                lease_owner = NULL, lease_worker = NULL, lease_expires = NULL, updated_at = extract(epoch FROM clock_timestamp())
            WHERE state IN (\(transferStates)) AND lease_expires < now()
            RETURNING id, state
            """
        ).rows
        for row in rows where row.string("state") == DownloadState.cancelled.rawValue {
            if let id = row.int64("id"), let item = try load(db, id: id) { try scrubSecrets(db, item) }
        }
    }
}
