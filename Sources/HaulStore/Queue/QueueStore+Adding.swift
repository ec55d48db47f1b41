import Foundation
import HaulCore

// Adding items and reading them back; a destination belongs to one unfinished item at a time.
extension QueueStore {
    /// Adds downloads in one transaction: all or none. A destination already used by an unfinished
    /// item (or twice in the batch) is refused with `.conflict`; in a shared store, a download
    /// that carries a secret (see `SharedStoreRule`) with `.secretRefused`.
    @discardableResult
    package func add(_ downloads: [NewDownload]) throws(StoreError) -> [Int64] {
        for new in downloads {
            if let field = Self.fieldWithNUL(new) {
                throw StoreError(
                    .invalidValue,
                    "\(field) of \(Redaction.url(new.url.replacingOccurrences(of: "\u{0}", with: "%00"))) holds a NUL byte, which no download can carry")
            }
        }
        if isShared {
            for new in downloads {
                if let refusal = SharedStoreRule.refusal(of: new) { throw StoreError(.secretRefused, refusal) }
            }
        }
        // A batch's items share their options: each distinct value is encoded once.
        var lastOptions: (value: StoredOptions, text: String)?
        var options: [String?] = []
        for new in downloads {
            guard let value = new.options else {
                options.append(nil)
                continue
            }
            if let last = lastOptions, last.value == value {
                options.append(last.text)
            } else {
                let text = try value.encoded()
                lastOptions = (value, text)
                options.append(text)
            }
        }
        // Left on the rows added: run again after a lost COMMIT reply, the transaction finds the
        // rows its first run added, rather than refusing them as another's.
        let token = UUID().uuidString
        return try database.transaction(durable: false) { db, rerun in
            if rerun {
                let earlier = try db.rows(dialect.addedEarlier, [.text(token)]).compactMap { $0.int64("id") }
                if earlier.count == downloads.count { return earlier }
            }
            if let lock = dialect.lockForAdding { try db.run(lock, []) }
            var ids: [Int64] = []
            var claimed: Set<String> = []
            for (new, options) in zip(downloads, options) {
                let key = new.destinationKey
                if claimed.contains(key) {
                    throw StoreError(.conflict, "\(Self.describe(new)) is used by two downloads in this batch")
                }
                if let other = try activeItemID(db, new) {
                    throw StoreError(.conflict, "\(Self.describe(new)) is already used by queued download \(other)")
                }
                claimed.insert(key)
                let host = HostKey.of(new.url)
                let row = try db.row(
                    dialect.insert,
                    [
                        .text(new.url), .text(new.method), .text(Self.encodeHeaders(new.headers)), new.body.map(StoreValue.blob) ?? .null,
                        .text(new.destinationKind.rawValue), .text(new.destination), new.range.map(StoreValue.text) ?? .null,
                        .text(new.existingPolicy.rawValue), .integer(Int64(new.priority)), .text((new.paused ? DownloadState.paused : .queued).rawValue),
                        options.map(StoreValue.text) ?? .null, .text(host), .text(token),
                    ])
                guard let id = row?.int64("id") else { throw StoreError(.io, "the queue database did not return the new item's id") }
                if let noteHost = dialect.noteHost { try db.run(noteHost, [.text(host)]) }
                ids.append(id)
            }
            return ids
        }
    }

    /// The unfinished item that would write where `new` would, if any.
    package func activeItem(for new: NewDownload) throws(StoreError) -> StoredDownload? {
        try database.read { db in try activeItemID(db, new).flatMap { try load(db, id: $0) } }
    }

    /// The newest completed item of the same URL that wrote where `new` would, if any: a batch run
    /// again finds what it already finished.
    package func completedItem(for new: NewDownload) throws(StoreError) -> StoredDownload? {
        try database.read { db in try completedItem(db, new) }
    }

    /// Both lookups for every one of `news`, in one read: a batch of a thousand files asks once.
    package func knownItems(for news: [NewDownload]) throws(StoreError) -> [KnownItems] {
        try database.read { db in
            try news.map { new in
                let active = try activeItemID(db, new).flatMap { try load(db, id: $0) }
                return KnownItems(active: active, completed: active == nil ? try completedItem(db, new) : nil)
            }
        }
    }

    package func item(_ id: Int64) throws(StoreError) -> StoredDownload? {
        try database.read { db in try load(db, id: id) }
    }

    /// Every item, oldest first.
    package func all() throws(StoreError) -> [StoredDownload] {
        try database.read { db in try db.rows(dialect.all, []).map(StoredDownload.init(row:)) }
    }

    /// Replaces the per-download options of an item (`haul serve`'s changeOption); a shared store
    /// refuses options that carry a secret, as `add` does.
    package func updateOptions(_ id: Int64, _ options: StoredOptions) throws(StoreError) {
        if isShared, let refusal = SharedStoreRule.refusal(of: options, for: id) { throw StoreError(.secretRefused, refusal) }
        let text = try options.encoded()
        try database.write { db in
            guard try db.run(dialect.updateOptions, [.text(text), .integer(id)]) == 1 else {
                throw StoreError(.notFound, "no download \(id) in the queue")
            }
        }
    }

    package func relocate(
        _ id: Int64, kind: StoredDownload.DestinationKind, destination: String, finalPath: String?, leaving intent: MoveIntent?
    ) throws(StoreError) {
        let intentText: StoreValue = try intent.map { intent throws(StoreError) in .text(try intent.encoded()) } ?? .null
        // Durable: the old names are removed once it returns.
        try database.write(durable: true) { db in
            let final: StoreValue = finalPath.map { .text($0) } ?? .null
            guard try db.run(dialect.relocate, [.text(kind.rawValue), .text(destination), final, .integer(id), intentText]) == 1 else {
                guard try db.row(dialect.load, [.integer(id)]) != nil else { throw StoreError(.notFound, "no download \(id) in the queue") }
                throw StoreError(.conflict, "download \(id) is being transferred; pause it before moving it")
            }
        }
    }

    package func recordMoveIntent(_ id: Int64, _ intent: MoveIntent) throws(StoreError) {
        let text = try intent.encoded()
        try database.write(durable: true) { db in
            guard try db.run(dialect.recordMoveIntent, [.text(text), .integer(id)]) == 1 else {
                guard let row = try db.row(dialect.load, [.integer(id)]) else { throw StoreError(.notFound, "no download \(id) in the queue") }
                if row.string("move_intent") != nil {
                    throw StoreError(.conflict, "download \(id) is being moved by another call (or a move of it was cut short); try again")
                }
                throw StoreError(.conflict, "download \(id) is being transferred; pause it before moving it")
            }
        }
    }

    @discardableResult
    package func clearMoveIntent(_ id: Int64, ifStill intent: MoveIntent) throws(StoreError) -> Bool {
        let text = try intent.encoded()
        return try database.write(durable: true) { db in try db.run(dialect.clearMoveIntent, [.integer(id), .text(text)]) == 1 }
    }

    /// Sets the priorities of several items in one transaction (the queue's order: priority
    /// first, then id).
    package func setPriorities(_ priorities: [(id: Int64, priority: Int)]) throws(StoreError) {
        try database.write { db in
            for (id, priority) in priorities {
                try db.run(dialect.setPriority, [.integer(Int64(priority)), .integer(id)])
            }
        }
    }

    private func completedItem(_ db: any StoreConnection, _ new: NewDownload) throws -> StoredDownload? {
        try db.row(dialect.completed, [.text(new.destinationKind.rawValue), .text(new.destination), .text(Redaction.withoutPassword(new.url))])
            .map(StoredDownload.init(row:))
    }

    /// The unfinished item writing to the same file (or the same URL into the same directory).
    private func activeItemID(_ db: any StoreConnection, _ new: NewDownload) throws -> Int64? {
        let row =
            new.destinationKind == .file
            ? try db.row(dialect.activeFile, [.text(new.destination)])
            : try db.row(dialect.activeInDirectory, [.text(new.destination), .text(new.url)])
        return row?.int64("id")
    }

    /// The name of a text of `new` with a NUL byte inside, nil when there is none: a request line,
    /// a header or a path cannot carry one, and PostgreSQL's text cannot hold one.
    private static func fieldWithNUL(_ new: NewDownload) -> String? {
        func hasNUL(_ text: String?) -> Bool { text?.utf8.contains(0) ?? false }
        if hasNUL(new.url) { return "the URL" }
        if hasNUL(new.destination) { return "the destination" }
        if hasNUL(new.method) || hasNUL(new.range) { return "the request" }
        if new.headers.contains(where: { hasNUL($0.name) || hasNUL($0.value) }) { return "a header" }
        return nil
    }

    private static func describe(_ new: NewDownload) -> String {
        new.destinationKind == .file ? "the destination \(new.destination)" : "\(new.url) into \(new.destination)"
    }
}
