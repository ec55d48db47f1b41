import Foundation
import HaulCore

// Adding items and reading them back; a destination belongs to one unfinished item at a time.
extension PostgresQueueStore {
    /// Adds downloads in one transaction: all or none. A destination already used by an unfinished
    /// item (or twice in the batch) is refused with `.conflict`; a download that carries a secret
    /// (see `SharedStoreRule`) with `.secretRefused`.
    package func add(_ downloads: [NewDownload]) throws(StoreError) -> [Int64] {
        for new in downloads {
            if let refusal = SharedStoreRule.refusal(of: new) { throw StoreError(.secretRefused, refusal) }
        }
        // Left on the rows added: run again after a lost COMMIT reply, the transaction finds the
        // rows its first run added, rather than refusing them as another's.
        let token = UUID().uuidString
        var runs = 0
        return try transaction { db in
            runs += 1
            if runs > 1 {
                let earlier = try db.query("SELECT id FROM downloads WHERE add_token = $1 ORDER BY id", [token]).rows.compactMap { $0.int64("id") }
                if earlier.count == downloads.count { return earlier }
            }
            // Two workers adding to the same destination at once: the second waits for the first.
            try db.query("SELECT pg_advisory_xact_lock(hashtext('haul-add'))")
            var ids: [Int64] = []
            var claimed: Set<String> = []
            for new in downloads {
                let key = new.destinationKey
                if claimed.contains(key) {
                    throw StoreError(.conflict, "\(Self.describe(new)) is used by two downloads in this batch")
                }
                if let other = try Self.activeItem(db, new) {
                    throw StoreError(.conflict, "\(Self.describe(new)) is already used by queued download \(other)")
                }
                claimed.insert(key)
                let options = try new.options.map { options throws(StoreError) in try options.encoded() }
                let row = try db.query(
                    """
                    INSERT INTO downloads (url, method, headers, body, destination_kind, destination, range_spec, existing_policy,
                        priority, state, options, host, add_token, created_at, updated_at)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, extract(epoch FROM clock_timestamp()),
                        extract(epoch FROM clock_timestamp()))
                    RETURNING id
                    """,
                    [
                        new.url, new.method, QueueStore.encodeHeaders(new.headers), new.body.map(PGBytes.encode), new.destinationKind.rawValue,
                        new.destination, new.range, new.existingPolicy.rawValue, String(new.priority),
                        (new.paused ? DownloadState.paused : .queued).rawValue, options, HostKey.of(new.url), token,
                    ]
                ).rows.first
                guard let id = row?.int64("id") else { throw StoreError(.io, "the queue database did not return the new item's id") }
                try db.query("INSERT INTO host_slots (host) VALUES ($1) ON CONFLICT (host) DO NOTHING", [HostKey.of(new.url)])
                ids.append(id)
            }
            return ids
        }
    }

    package func activeItem(for new: NewDownload) throws(StoreError) -> StoredDownload? {
        try transaction { db in
            try Self.activeItem(db, new).flatMap { try Self.load(db, id: $0) }
        }
    }

    package func completedItem(for new: NewDownload) throws(StoreError) -> StoredDownload? {
        try transaction { db in
            let row = try db.query(
                """
                SELECT * FROM downloads WHERE destination_kind = $1 AND destination = $2 AND url = $3 AND state = 'completed'
                ORDER BY id DESC LIMIT 1
                """, [new.destinationKind.rawValue, new.destination, Redaction.withoutPassword(new.url)]
            ).rows.first
            return try row.map(Self.decode)
        }
    }

    package func item(_ id: Int64) throws(StoreError) -> StoredDownload? {
        try transaction { db in try Self.load(db, id: id) }
    }

    package func all() throws(StoreError) -> [StoredDownload] {
        try transaction { db in try db.query("SELECT * FROM downloads ORDER BY id").rows.map(Self.decode) }
    }

    package func updateOptions(_ id: Int64, _ options: StoredOptions) throws(StoreError) {
        let text = try options.encoded()
        try transaction { db in
            let result = try db.query(
                "UPDATE downloads SET options = $1, updated_at = extract(epoch FROM clock_timestamp()) WHERE id = $2", [text, String(id)])
            guard result.affected == 1 else { throw StoreError(.notFound, "no download \(id) in the queue") }
        }
    }

    package func setPriorities(_ priorities: [(id: Int64, priority: Int)]) throws(StoreError) {
        try transaction { db in
            for (id, priority) in priorities {
                try db.query("UPDATE downloads SET priority = $1 WHERE id = $2", [String(priority), String(id)])
            }
        }
    }

    private static func describe(_ new: NewDownload) -> String {
        new.destinationKind == .file ? "the destination \(new.destination)" : "\(new.url) into \(new.destination)"
    }

    private static func activeItem(_ db: PGConnection, _ new: NewDownload) throws -> Int64? {
        let active = "state NOT IN ('completed', 'cancelled')"
        let rows: [Row]
        if new.destinationKind == .file {
            rows = try db.query("SELECT id FROM downloads WHERE destination_kind = 'file' AND destination = $1 AND \(active) LIMIT 1", [new.destination])
                .rows
        } else {
            rows = try db.query(
                "SELECT id FROM downloads WHERE destination_kind = 'directory' AND destination = $1 AND url = $2 AND \(active) LIMIT 1",
                [new.destination, new.url]
            ).rows
        }
        return rows.first?.int64("id")
    }
}
