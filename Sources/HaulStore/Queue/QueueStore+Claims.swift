import Foundation
import HaulCore

// Claims, lease renewal and the recovery of items whose owner was lost.
extension QueueStore {
    /// Settles the transfers `owner` just finished (each only under its own lease), returns items
    /// whose owner was lost to where they meant to go (on the first claim, then at most every
    /// `recoveryThrottle` interval), then claims the best `count` queued items for `owner`, best
    /// first (fewer when fewer are claimable): one transaction in all. `among` limits the choice
    /// to some items (a batch runs only its own; `[]` settles only). `rules`: a claim skips items
    /// of a host that already has `maxPerHost` items in a transfer state, across every worker of
    /// the store (the items this claim leases count as they are leased).
    ///
    /// The claim leaves a token on the rows it leases. A transaction run again after its
    /// connection was lost may have committed the first time (the COMMIT reached the server, its
    /// reply did not): the second run then finds the rows it leased by this token and returns
    /// them, rather than leasing others and stranding the first.
    package func claim(
        _ count: Int, for owner: LeaseOwner, among ids: Set<Int64>?, settling settlements: [QueueSettlement], rules: ClaimRules
    ) throws(StoreError) -> [StoredDownload] {
        let recover = recoveryThrottle.withLock { $0.takeIfDue(now: .now) }
        // Only a claim that leases needs one. Drawn from the system's generator (one getrandom):
        // `UUID()` opens, reads and closes /dev/urandom each time, three calls per claim.
        let token = count > 0 && ids?.isEmpty != true ? Self.claimToken() : ""
        let (claimed, removedSecrets) = try database.transaction(durable: false) { db, rerun -> ([StoredDownload], Bool) in
            if rerun, !token.isEmpty {
                let earlier = try db.rows(dialect.claimedEarlier, [.text(owner.encoded), .text(token)])
                if !earlier.isEmpty { return (try earlier.map(StoredDownload.init(row:)), false) }
            }
            var removedSecrets = false
            // Their rows read and locked in one statement, each used once (a second settlement of
            // one item reads the row its first one left).
            var loaded = try loadLocking(db, settlements.map(\.id))
            for settlement in settlements {
                do {
                    let item = loaded.removeValue(forKey: settlement.id)
                    removedSecrets = try apply(db, settlement, owner: settlement.lease?.owner ?? owner, loaded: item).removedSecrets || removedSecrets
                } catch let error as StoreError where error.kind == .conflict || error.kind == .notFound {
                    continue
                }
            }
            if recover { removedSecrets = try recoverAbandoned(db) || removedSecrets }
            if let ids, ids.isEmpty { return ([], removedSecrets) }
            guard count > 0 else { return ([], removedSecrets) }
            return (try claimBest(db, count, for: owner, among: ids, rules: rules, token: token), removedSecrets)
        }
        if removedSecrets { database.noteSecretsRemoved() }
        return claimed
    }

    /// A fresh claim token: 128 random bits, in hex.
    static func claimToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(generator.next() as UInt64, radix: 16) + "-" + String(generator.next() as UInt64, radix: 16)
    }

    /// Claims the best `count` queued items (among `ids`, if given) for `owner`, looking through
    /// the queued items best first. A small set of ids (or none, or any on a shared store) is
    /// chosen among by the database, `count` rows at a time (on PostgreSQL, each row looked at is
    /// locked until the claim commits); a large one (a batch of thousands on one machine) here,
    /// page by page, where a batch usually finds its own in the first rows. A host found at its
    /// limit is left out for the rest of the claim (looking again from the best item, which the
    /// statement then passes over: each host is found full at most once, so a claim ends).
    private func claimBest(_ db: any StoreConnection, _ count: Int, for owner: LeaseOwner, among ids: Set<Int64>?, rules: ClaimRules, token: String)
        throws -> [StoredDownload]
    {
        // On a shared store always: rows of a page are locked until the claim commits, and rows of
        // other batches locked there would be passed over by their own workers meanwhile.
        let chosenByDatabase = isShared || ids.map { $0.count <= 256 } ?? true
        let among: StoreValue = ids.flatMap { chosenByDatabase ? .integers($0.sorted()) : nil } ?? .null
        let page = rules.maxPerHost == nil ? dialect.nextQueued : dialect.nextQueuedLockingHost
        let limit: StoreValue = rules.maxPerHost.map { .integer(Int64($0)) } ?? .null
        var claimed: [StoredDownload] = []
        var fullHosts: [String] = []
        // Rows looked at and not leased: a leased row is no longer queued, so it leaves the pages.
        var offset: Int64 = 0
        var size = chosenByDatabase ? Int64(count) : 8
        looking: while true {
            let rows = try db.rows(page, [among, .integer(size), .integer(offset), .texts(fullHosts)])
            if rows.isEmpty { return claimed }
            offset += Int64(rows.count)
            if !chosenByDatabase { size = 64 }
            if rules.maxPerHost == nil {
                // No host to count: every queued row found is leased, the page's in one statement.
                let chosen = rows.compactMap { $0.int64("id") }.filter { ids?.contains($0) ?? true }.prefix(count - claimed.count)
                if chosen.isEmpty { continue looking }
                claimed += try leaseAll(db, Array(chosen), for: owner, token: token)
                if claimed.count == count { return claimed }
                offset -= Int64(chosen.count)
                continue looking
            }
            for row in rows {
                guard let id = row.int64("id"), ids?.contains(id) ?? true else { continue }
                let host = row.string("host") ?? ""
                // A host left out by the statement may still come back, when what the row holds is
                // not what was read (bytes that are not UTF-8, read as U+FFFD) or not what the
                // database compares (SQLite's JSON stops at a NUL): passed over here, the page
                // moves on, so a claim always ends.
                if fullHosts.contains(host) { continue }
                let leased = try db.row(
                    dialect.lease,
                    [.text(owner.encoded), .text(database.workerName(owner)), .real(leaseSeconds), .text(token), .integer(id), limit, .text(host)])
                if let leased {
                    claimed.append(try StoredDownload(row: leased))
                    if claimed.count == count { return claimed }
                    offset -= 1
                    continue
                }
                // Not leased: its host is at its limit (without one, a row is leased once found).
                guard rules.maxPerHost != nil else { return claimed }
                fullHosts.append(host)
                offset = 0
                continue looking
            }
        }
    }

    /// Leases `chosen` (queued rows, best first) for `owner` in one statement; returns them best first.
    private func leaseAll(_ db: any StoreConnection, _ chosen: [Int64], for owner: LeaseOwner, token: String) throws -> [StoredDownload] {
        let rows = try db.rows(
            dialect.leaseMany, [.text(owner.encoded), .text(database.workerName(owner)), .real(leaseSeconds), .text(token), .integers(chosen)])
        let leased = try rows.map(StoredDownload.init(row:))
        let rank = Dictionary(uniqueKeysWithValues: chosen.enumerated().map { ($1, $0) })
        return leased.sorted { rank[$0.id, default: 0] < rank[$1.id, default: 0] }
    }

    /// Extends `leases` (those their owner knows it holds) and reports the state of each one
    /// still its own, so a pause or cancel requested by another process reaches the running
    /// transfer; one missing from the answer was lost. A row leased to the owner that it does not
    /// know of (a claim whose reply was lost) is never renewed: it expires and is rescued.
    package func renewLeases(_ leases: [Lease]) throws(StoreError) -> [Int64: DownloadState] {
        guard let owner = leases.first?.owner else { return [:] }
        let held = leases.filter { $0.owner == owner }.sorted { $0.item < $1.item }
        return try database.write { db in
            let rows = try db.rows(
                dialect.renew, [.text(owner.encoded), .real(leaseSeconds), .integers(held.map(\.item)), .integers(held.map(\.epoch))])
            var states: [Int64: DownloadState] = [:]
            for row in rows {
                if let id = row.int64("id"), let state = row.string("state").flatMap(DownloadState.init(rawValue:)) { states[id] = state }
            }
            return states
        }
    }

    /// How many items a run would take on now: queued or in a transfer state, damaged ones included.
    package func pendingCount() throws(StoreError) -> Int {
        try database.read { db in Int(try db.row(dialect.pendingCount, [])?.int64("n") ?? 0) }
    }

    /// Whether any item (among `ids`) is queued or in a transfer state, whatever became of its
    /// owner: abandoned items count until a claim recovers them.
    package func hasPendingWork(among ids: Set<Int64>? = nil) throws(StoreError) -> Bool {
        try database.read { db in try db.row(dialect.pendingAmong, [ids.map { .integers($0.sorted()) } ?? .null]) != nil }
    }

    /// Returns the items whose lease expired (by the database's clock) or, on one machine, whose
    /// owner died, to where they meant to go, as `DownloadLifecycle` says for `.ownerLost`; a
    /// cancellation no one lived to finish settles, and its item loses what `SecretScrub` takes
    /// out. A row whose state cannot be read (not one Haul writes) is failed with the reason once
    /// it has no live lease, since no owner can settle it. Returns whether secrets were removed.
    private func recoverAbandoned(_ db: any StoreConnection) throws -> Bool {
        var removedSecrets = false
        for row in try db.rows(dialect.recoveryCandidates, []) {
            guard let id = row.int64("id") else { continue }
            let owner = row.string("lease_owner").flatMap(LeaseOwner.init(encoded:))
            let expired = row.bool("expired") ?? true
            // A worker elsewhere can only be judged by its lease; one of this machine also by its process.
            guard expired || (!isShared && !(owner?.isAlive ?? false)) else { continue }
            guard let state = row.string("state").flatMap(DownloadState.init(rawValue:)) else {
                let reason = try load(db, id: id)?.damage?.reason ?? "its stored state is damaged"
                try db.run(dialect.failUnreadable, [.text("download \(id): \(reason); remove it and add it again"), .integer(id)])
                continue
            }
            guard case .success(let (next, _)) = DownloadLifecycle.apply(.ownerLost, to: state) else { continue }
            try db.run(dialect.release, [.text(next.rawValue), .integer(id)])
            // A cancellation its owner did not live to finish settles here, for good.
            if next == .cancelled || next == .completed, let item = try load(db, id: id) {
                removedSecrets = try scrubSecrets(db, item) || removedSecrets
            }
        }
        return removedSecrets
    }
}
