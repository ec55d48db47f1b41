import Foundation
import HaulCore

// Adding items and reading them back; a destination belongs to one unfinished item at a time.
extension QueueStore {
    /// Adds downloads in one transaction: all or none. A destination already used by an unfinished
    /// item (or twice in the batch) is refused with `.conflict`.
    @discardableResult
    package func add(_ downloads: [NewDownload]) throws(StoreError) -> [Int64] {
        try write { db in
            var ids: [Int64] = []
            var claimed: Set<String> = []
            var lastOptions: (value: StoredOptions, text: String)?
            for new in downloads {
                let key = new.destinationKey
                if claimed.contains(key) {
                    throw StoreError(.conflict, "\(Self.describe(new)) is used by two downloads in this batch")
                }
                if let other = try Self.activeItem(db, destinationKind: new.destinationKind, destination: new.destination, url: new.url) {
                    throw StoreError(.conflict, "\(Self.describe(new)) is already used by queued download \(other)")
                }
                claimed.insert(key)
                let now = Date().timeIntervalSince1970
                // A batch's items share their options: each distinct value is encoded once.
                let options: String?
                if let value = new.options {
                    if let last = lastOptions, last.value == value {
                        options = last.text
                    } else {
                        options = try value.encoded()
                        lastOptions = options.map { (value, $0) }
                    }
                } else {
                    options = nil
                }
                try db.execute(
                    """
                    INSERT INTO downloads (url, method, headers, body, destination_kind, destination, range_spec,
                        existing_policy, priority, state, created_at, updated_at, options, host)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                    [
                        .text(new.url), .text(new.method), .text(Self.encodeHeaders(new.headers)),
                        new.body.map(SQLiteValue.blob) ?? .null, .text(new.destinationKind.rawValue), .text(new.destination),
                        new.range.map(SQLiteValue.text) ?? .null, .text(new.existingPolicy.rawValue), .integer(Int64(new.priority)),
                        .text((new.paused ? DownloadState.paused : .queued).rawValue), .real(now), .real(now),
                        options.map(SQLiteValue.text) ?? .null, .text(HostKey.of(new.url)),
                    ])
                ids.append(db.lastInsertRowID)
            }
            return ids
        }
    }

    /// The unfinished item that would write where `new` would, if any.
    package func activeItem(for new: NewDownload) throws(StoreError) -> StoredDownload? {
        try read { db in try Self.activeItem(db, new) }
    }

    /// The newest completed item of the same URL that wrote where `new` would, if any: a batch run
    /// again finds what it already finished.
    package func completedItem(for new: NewDownload) throws(StoreError) -> StoredDownload? {
        try read { db in try Self.completedItem(db, new) }
    }

    /// Both lookups for every one of `news`, in one read transaction.
    package func knownItems(for news: [NewDownload]) throws(StoreError) -> [KnownItems] {
        try read { db in
            try news.map { new in
                let active = try Self.activeItem(db, new)
                return KnownItems(active: active, completed: active == nil ? try Self.completedItem(db, new) : nil)
            }
        }
    }

    private static func activeItem(_ db: SQLiteConnection, _ new: NewDownload) throws -> StoredDownload? {
        try activeItem(db, destinationKind: new.destinationKind, destination: new.destination, url: new.url).flatMap { try load(db, id: $0) }
    }

    private static func completedItem(_ db: SQLiteConnection, _ new: NewDownload) throws -> StoredDownload? {
        let rows = try db.query(
            """
            SELECT id FROM downloads WHERE destination_kind = ? AND destination = ? AND url = ? AND state = 'completed'
            ORDER BY id DESC LIMIT 1
            """, [.text(new.destinationKind.rawValue), .text(new.destination), .text(Redaction.withoutPassword(new.url))])
        return try rows.first?.int64("id").flatMap { try load(db, id: $0) }
    }

    package func item(_ id: Int64) throws(StoreError) -> StoredDownload? {
        try read { db in try Self.load(db, id: id) }
    }

    /// Every item, oldest first.
    package func all() throws(StoreError) -> [StoredDownload] {
        try read { db in try db.query("SELECT * FROM downloads ORDER BY id").map(Self.decode) }
    }

    private static func describe(_ new: NewDownload) -> String {
        new.destinationKind == .file ? "the destination \(new.destination)" : "\(new.url) into \(new.destination)"
    }

    /// The unfinished item writing to the same file (or the same URL into the same directory).
    private static func activeItem(_ db: SQLiteConnection, destinationKind: StoredDownload.DestinationKind, destination: String, url: String) throws -> Int64? {
        let active = "state NOT IN ('completed', 'cancelled')"
        let rows: [Row]
        if destinationKind == .file {
            rows = try db.query("SELECT id FROM downloads WHERE destination_kind = 'file' AND destination = ? AND \(active) LIMIT 1", [.text(destination)])
        } else {
            rows = try db.query(
                "SELECT id FROM downloads WHERE destination_kind = 'directory' AND destination = ? AND url = ? AND \(active) LIMIT 1",
                [.text(destination), .text(url)])
        }
        return rows.first?.int64("id")
    }

    /// Replaces the per-download options of an item (`haul serve`'s changeOption).
    package func updateOptions(_ id: Int64, _ options: StoredOptions) throws(StoreError) {
        let text = try options.encoded()
        try write { db in
            try db.execute("UPDATE downloads SET options = ?, updated_at = ? WHERE id = ?", [.text(text), .real(Date().timeIntervalSince1970), .integer(id)])
            guard db.changes == 1 else { throw StoreError(.notFound, "no download \(id) in the queue") }
        }
    }

    /// Sets the priorities of several items in one transaction (the queue's order: priority
    /// first, then id).
    package func setPriorities(_ priorities: [(id: Int64, priority: Int)]) throws(StoreError) {
        try write { db in
            for (id, priority) in priorities {
                try db.execute("UPDATE downloads SET priority = ? WHERE id = ?", [.integer(Int64(priority)), .integer(id)])
            }
        }
    }
}
