import Foundation
import HaulCore
import Synchronization

/// The durable queue: every download Haul manages, its lifecycle state, its lease and its resume
/// record, in one SQLite database (WAL, one serial owner of the connection).
///
/// Every change of state goes through `DownloadLifecycle`, inside a transaction, so two processes
/// sharing the store never disagree about where an item is.
public final class QueueStore: Sendable {
    /// The database file inside the state directory.
    public static let fileName = "haul.sqlite"
    /// Seconds a lease lasts without renewal; an owner that stops renewing is presumed dead.
    public static let leaseSeconds: Double = 20

    public let path: String
    private let database: DatabaseQueue
    /// When abandoned items were last looked for; claims look again at most every `recoveryInterval`.
    private let lastRecovery = Mutex<Double>(0)
    static let recoveryInterval: Double = 2

    /// Opens (creating if needed) the store in `directory`. A file that is not a Haul store is
    /// reported, never overwritten.
    public init(directory: String) throws(StoreError) {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw StoreError(.io, "cannot create the state directory \(directory): \(error.localizedDescription)")
        }
        path = (directory as NSString).appendingPathComponent(Self.fileName)
        do {
            // NORMAL: a power cut may roll back the latest commits, never corrupt the store. Every
            // write here only ever claims less than is durable (data is fdatasync'ed before a record
            // claims it), so a lost commit means re-fetching a little, never trusting torn bytes;
            // a commit that syncs would cost a disk flush per state change of every download.
            database = try DatabaseQueue(path: path, synchronous: .normal)
            try Self.migrator.migrate(database)
        } catch {
            throw Self.storeError(error, path: (directory as NSString).appendingPathComponent(Self.fileName))
        }
    }

    /// The schema, as ordered named migrations.
    static let migrator: Migrator = {
        var migrator = Migrator()
        migrator.registerMigration("v1-downloads") { db in
            try db.execute("""
                CREATE TABLE downloads (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    url TEXT NOT NULL,
                    method TEXT NOT NULL,
                    headers TEXT NOT NULL,
                    body BLOB,
                    destination_kind TEXT NOT NULL,
                    destination TEXT NOT NULL,
                    range_spec TEXT,
                    existing_policy TEXT NOT NULL,
                    priority INTEGER NOT NULL DEFAULT 0,
                    state TEXT NOT NULL,
                    bytes INTEGER NOT NULL DEFAULT 0,
                    total_bytes INTEGER,
                    speed REAL NOT NULL DEFAULT 0,
                    final_path TEXT,
                    last_error TEXT,
                    error_category TEXT,
                    record TEXT,
                    lease_owner TEXT,
                    lease_expires REAL,
                    created_at REAL NOT NULL,
                    updated_at REAL NOT NULL
                );
                CREATE INDEX downloads_runnable ON downloads(state, priority DESC, id);
                CREATE INDEX downloads_destination ON downloads(destination);
                """)
        }
        migrator.registerMigration("v2-attempts") { db in
            // How many times an item was claimed: a file found at the destination of an item that
            // ran before may be that item's own finished file, to be verified, not refused.
            try db.execute("ALTER TABLE downloads ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0")
        }
        return migrator
    }()

    // MARK: adding and reading

    /// Adds downloads in one transaction: all or none. A destination already used by an unfinished
    /// item (or twice in the batch) is refused with `.conflict`.
    @discardableResult
    public func add(_ downloads: [NewDownload]) throws(StoreError) -> [Int64] {
        try write { db in
            var ids: [Int64] = []
            var claimed: Set<String> = []
            for new in downloads {
                let key = Self.destinationKey(new)
                if claimed.contains(key) {
                    throw StoreError(.conflict, "\(Self.describe(new)) is used by two downloads in this batch")
                }
                if let other = try Self.activeItem(db, destinationKind: new.destinationKind, destination: new.destination, url: new.url) {
                    throw StoreError(.conflict, "\(Self.describe(new)) is already used by queued download \(other)")
                }
                claimed.insert(key)
                let now = Date().timeIntervalSince1970
                try db.execute("""
                    INSERT INTO downloads (url, method, headers, body, destination_kind, destination, range_spec,
                        existing_policy, priority, state, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, [
                        .text(new.url), .text(new.method), .text(Self.encodeHeaders(new.headers)),
                        new.body.map(SQLiteValue.blob) ?? .null, .text(new.destinationKind.rawValue), .text(new.destination),
                        new.range.map(SQLiteValue.text) ?? .null, .text(new.existingPolicy), .integer(Int64(new.priority)),
                        .text((new.paused ? DownloadState.paused : .queued).rawValue), .real(now), .real(now),
                    ])
                ids.append(db.lastInsertRowID)
            }
            return ids
        }
    }

    /// The unfinished item that would write where `new` would, if any.
    public func activeItem(for new: NewDownload) throws(StoreError) -> StoredDownload? {
        try read { db in
            guard let id = try Self.activeItem(db, destinationKind: new.destinationKind, destination: new.destination, url: new.url) else {
                return nil
            }
            return try Self.load(db, id: id)
        }
    }

    /// The newest completed item of the same URL that wrote where `new` would, if any: a batch run
    /// again finds what it already finished.
    public func completedItem(for new: NewDownload) throws(StoreError) -> StoredDownload? {
        try read { db in
            let rows = try db.query("""
                SELECT id FROM downloads WHERE destination_kind = ? AND destination = ? AND url = ? AND state = 'completed'
                ORDER BY id DESC LIMIT 1
                """, [.text(new.destinationKind.rawValue), .text(new.destination), .text(new.url)])
            return try rows.first?.int64("id").flatMap { try Self.load(db, id: $0) }
        }
    }

    public func item(_ id: Int64) throws(StoreError) -> StoredDownload? {
        try read { db in try Self.load(db, id: id) }
    }

    /// Every item, oldest first.
    public func all() throws(StoreError) -> [StoredDownload] {
        try read { db in try db.query("SELECT * FROM downloads ORDER BY id").map(Self.decode) }
    }

    // MARK: lifecycle

    /// Applies a lifecycle input to an item; the action says what its owner must do.
    ///
    /// `owner`: for the end of a transfer, the process that ran it. If its lease was taken over
    /// (it hung past the lease and another process recovered the item), the input is refused with
    /// `.conflict`, so a stale owner never settles an item another process is downloading.
    /// `.start` is refused: only `claimNext` starts an item, because only it takes a lease.
    @discardableResult
    public func apply(
        _ input: LifecycleInput,
        to id: Int64,
        error: (category: String, message: String)? = nil,
        finished: (bytes: Int64, path: String)? = nil,
        owner: LeaseOwner? = nil
    ) throws(StoreError) -> (StoredDownload, LifecycleAction) {
        try write { db in
            try Self.apply(db, Settlement(id: id, input: input, error: error, finished: finished), owner: owner)
        }
    }

    /// The end of one transfer, applied together with the next claim (see `claimNext`).
    public struct Settlement: Sendable {
        public let id: Int64
        public let input: LifecycleInput
        public let error: (category: String, message: String)?
        public let finished: (bytes: Int64, path: String)?

        public init(id: Int64, input: LifecycleInput, error: (category: String, message: String)? = nil, finished: (bytes: Int64, path: String)? = nil) {
            self.id = id
            self.input = input
            self.error = error
            self.finished = finished
        }
    }

    private static func apply(_ db: SQLiteConnection, _ change: Settlement, owner: LeaseOwner?) throws -> (StoredDownload, LifecycleAction) {
        let id = change.id
        guard var item = try load(db, id: id) else {
            throw StoreError(.notFound, "no download \(id) in the queue")
        }
        if change.input == .start {
            throw StoreError(.conflict, "download \(id): downloads are started by claiming them, which takes a lease")
        }
        if let owner, try leaseOwner(db, id) != owner.encoded {
            throw StoreError(.conflict, "download \(id) is no longer leased to this process")
        }
        let (next, action): (DownloadState, LifecycleAction)
        switch DownloadLifecycle.apply(change.input, to: item.state) {
        case .success(let result): (next, action) = result
        case .failure(let illegal): throw StoreError(.conflict, "download \(id): \(illegal.description)")
        }
        item.state = next
        if let error = change.error {
            item.errorCategory = error.category
            item.lastError = error.message
        } else if next == .queued || next == .running || next == .completed {
            item.errorCategory = nil
            item.lastError = nil
        }
        let releasesLease = next.isSettled || next == .queued
        try db.execute("""
            UPDATE downloads SET state = ?, last_error = ?, error_category = ?, updated_at = ?,
                lease_owner = CASE WHEN ? THEN NULL ELSE lease_owner END,
                lease_expires = CASE WHEN ? THEN NULL ELSE lease_expires END
            WHERE id = ?
            """, [
                .text(next.rawValue), item.lastError.map(SQLiteValue.text) ?? .null, item.errorCategory.map(SQLiteValue.text) ?? .null,
                .real(Date().timeIntervalSince1970), .init(releasesLease), .init(releasesLease), .integer(id),
            ])
        if let finished = change.finished {
            // A completed download: its final size and place, and no record left to resume from.
            try db.execute("UPDATE downloads SET bytes = ?, total_bytes = ?, speed = 0, final_path = ?, record = NULL WHERE id = ?",
                           [.integer(finished.bytes), .integer(finished.bytes), .text(finished.path), .integer(id)])
        }
        return (item, action)
    }

    private static func leaseOwner(_ db: SQLiteConnection, _ id: Int64) throws -> String? {
        try db.query("SELECT lease_owner FROM downloads WHERE id = ?", [.integer(id)]).first?.string("lease_owner")
    }

    /// Removes a settled item (and its record). A running item must be cancelled first.
    public func remove(_ id: Int64) throws(StoreError) {
        try write { db in
            guard let item = try Self.load(db, id: id) else {
                throw StoreError(.notFound, "no download \(id) in the queue")
            }
            guard item.state.isSettled || item.state == .queued else {
                throw StoreError(.conflict, "download \(id) is \(item.state.rawValue); cancel or pause it first")
            }
            try db.execute("DELETE FROM downloads WHERE id = ?", [.integer(id)])
        }
    }

    // MARK: leases

    /// Settles the transfers `owner` just finished, returns items whose owner died to where they
    /// meant to go (running → queued, pausing → paused, cancelling → cancelled; at most every
    /// `recoveryInterval` per store, and on the first claim), then claims the best queued item for
    /// `owner` — all in one transaction. `among` limits the choice to some items (a batch runs only
    /// its own). A settlement this owner may no longer make (its lease was taken over) is skipped.
    public func claimNext(for owner: LeaseOwner, among ids: Set<Int64>? = nil, settling settlements: [Settlement] = []) throws(StoreError) -> StoredDownload? {
        let now = Date().timeIntervalSince1970
        let recover = lastRecovery.withLock { last -> Bool in
            guard now - last >= Self.recoveryInterval else { return false }
            last = now
            return true
        }
        return try write { db in
            for settlement in settlements {
                do {
                    _ = try Self.apply(db, settlement, owner: owner)
                } catch let error as StoreError where error.kind == .conflict || error.kind == .notFound {
                    continue
                }
            }
            if recover { try Self.recoverAbandoned(db) }
            // Page through the queued items best first; a batch (`among`) usually finds its own on the first page.
            var offset: Int64 = 0
            while true {
                let page = try db.query(
                    "SELECT id FROM downloads WHERE state = 'queued' ORDER BY priority DESC, id LIMIT 64 OFFSET ?", [.integer(offset)])
                if page.isEmpty { break }
                offset += Int64(page.count)
                for row in page {
                    guard let id = row.int64("id"), ids?.contains(id) ?? true else { continue }
                    let now = Date().timeIntervalSince1970
                    try db.execute("""
                        UPDATE downloads SET state = 'running', lease_owner = ?, lease_expires = ?, updated_at = ?,
                            last_error = NULL, error_category = NULL, attempts = attempts + 1
                        WHERE id = ? AND state = 'queued'
                        """, [.text(owner.encoded), .real(now + Self.leaseSeconds), .real(now), .integer(id)])
                    guard db.changes == 1 else { continue }
                    return try Self.load(db, id: id)
                }
            }
            return nil
        }
    }

    /// Extends the leases `owner` holds and reports the state of each of its items, so a pause or
    /// cancel requested by another process reaches the running transfer.
    public func renewLeases(for owner: LeaseOwner) throws(StoreError) -> [Int64: DownloadState] {
        try write { db in
            try db.execute("UPDATE downloads SET lease_expires = ? WHERE lease_owner = ?",
                           [.real(Date().timeIntervalSince1970 + Self.leaseSeconds), .text(owner.encoded)])
            var states: [Int64: DownloadState] = [:]
            for row in try db.query("SELECT id, state FROM downloads WHERE lease_owner = ?", [.text(owner.encoded)]) {
                if let id = row.int64("id"), let state = row.string("state").flatMap(DownloadState.init(rawValue:)) {
                    states[id] = state
                }
            }
            return states
        }
    }

    /// Whether any item is queued or in a transfer state (running, pausing, cancelling), whatever
    /// became of its owner: abandoned items count until a claim recovers them.
    public func hasPendingWork(among ids: Set<Int64>? = nil) throws(StoreError) -> Bool {
        try read { db in
            let rows = try db.query("SELECT id FROM downloads WHERE state IN ('queued', 'running', 'pausing', 'cancelling')")
            return rows.contains { row in row.int64("id").map { ids?.contains($0) ?? true } ?? false }
        }
    }

    // MARK: progress and records

    public func updateProgress(_ id: Int64, bytes: Int64, totalBytes: Int64?, bytesPerSecond: Double, finalPath: String?) throws(StoreError) {
        try write { db in
            try db.execute("""
                UPDATE downloads SET bytes = ?, total_bytes = ?, speed = ?, final_path = COALESCE(?, final_path), updated_at = ?
                WHERE id = ?
                """, [.integer(bytes), totalBytes.map(SQLiteValue.integer) ?? .null, .real(bytesPerSecond),
                      finalPath.map(SQLiteValue.text) ?? .null, .real(Date().timeIntervalSince1970), .integer(id)])
        }
    }

    /// The resume record of an item, kept in its row.
    public func recordSlot(_ id: Int64) -> QueueRecordSlot {
        QueueRecordSlot(store: self, id: id)
    }

    /// The record slot of an item just claimed: `load` answers from the claimed row, so starting a
    /// download costs no second trip to the database (a runner loads its record once, at the start).
    public func recordSlot(for item: StoredDownload) -> QueueRecordSlot {
        QueueRecordSlot(store: self, id: item.id, claimed: item.recordText)
    }

    func loadRecord(_ id: Int64) throws(StoreError) -> ResumeRecord? {
        let text: String? = try read { db in
            try db.query("SELECT record FROM downloads WHERE id = ?", [.integer(id)]).first?.string("record")
        }
        return try Self.decodeRecord(text, id: id)
    }

    static func decodeRecord(_ text: String?, id: Int64) throws(StoreError) -> ResumeRecord? {
        guard let text else { return nil }
        do {
            return try JSONDecoder().decode(ResumeRecord.self, from: Data(text.utf8))
        } catch {
            throw StoreError(.corruptRecord, "the resume record of download \(id) is damaged")
        }
    }

    func saveRecord(_ id: Int64, _ record: ResumeRecord?) throws(StoreError) {
        var text: SQLiteValue = .null
        if let record {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            guard let data = try? encoder.encode(record), let string = String(data: data, encoding: .utf8) else {
                throw StoreError(.io, "cannot encode the resume record of download \(id)")
            }
            text = .text(string)
        }
        try write { db in
            try db.execute("UPDATE downloads SET record = ? WHERE id = ?", [text, .integer(id)])
        }
    }

    // MARK: plumbing

    private func read<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws(StoreError) -> T {
        do {
            return try database.read(body)
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    private func write<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws(StoreError) -> T {
        do {
            return try database.write(body)
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    static func storeError(_ error: any Error, path: String) -> StoreError {
        switch error {
        case let error as StoreError:
            return error
        case let error as SQLiteError where error.isBusy:
            return StoreError(.locked, "the queue database \(path) is locked by another process; try again")
        case let error as SQLiteError where error.isCorrupt:
            return StoreError(.corruptStore, "\(path) is not a usable Haul queue database (\(error.message)); it was left untouched — move it aside to start a new queue")
        case let error as SQLiteError where error.resultCode == 13:
            return StoreError(.noSpace, "the disk holding \(path) is full")
        case let error as MigrationError:
            return StoreError(.corruptStore, "\(error.description)")
        default:
            return StoreError(.io, "queue database \(path): \(error)")
        }
    }

    private static func destinationKey(_ new: NewDownload) -> String {
        new.destinationKind == .file ? "file:" + new.destination : "dir:" + new.destination + "|" + new.url
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
            rows = try db.query("SELECT id FROM downloads WHERE destination_kind = 'directory' AND destination = ? AND url = ? AND \(active) LIMIT 1", [.text(destination), .text(url)])
        }
        return rows.first?.int64("id")
    }

    private static func recoverAbandoned(_ db: SQLiteConnection) throws {
        let now = Date().timeIntervalSince1970
        let rows = try db.query("SELECT id, state, lease_owner, lease_expires FROM downloads WHERE state IN ('running', 'pausing', 'cancelling')")
        for row in rows {
            guard let id = row.int64("id"), let state = row.string("state").flatMap(DownloadState.init(rawValue:)) else { continue }
            let owner = row.string("lease_owner").flatMap(LeaseOwner.init(encoded:))
            let expired = (row.double("lease_expires") ?? 0) < now
            guard expired || !(owner?.isAlive ?? false) else { continue }
            guard case .success(let (next, _)) = DownloadLifecycle.apply(.ownerLost, to: state) else { continue }
            try db.execute("UPDATE downloads SET state = ?, lease_owner = NULL, lease_expires = NULL, updated_at = ? WHERE id = ?",
                           [.text(next.rawValue), .real(now), .integer(id)])
        }
    }

    private static func load(_ db: SQLiteConnection, id: Int64) throws -> StoredDownload? {
        try db.query("SELECT * FROM downloads WHERE id = ?", [.integer(id)]).first.map(decode)
    }

    private static func decode(_ row: Row) -> StoredDownload {
        StoredDownload(
            id: row.int64("id") ?? 0,
            url: row.string("url") ?? "",
            method: row.string("method") ?? "GET",
            headers: decodeHeaders(row.string("headers") ?? "[]"),
            body: row.blob("body"),
            destinationKind: row.string("destination_kind").flatMap(StoredDownload.DestinationKind.init(rawValue:)) ?? .file,
            destination: row.string("destination") ?? "",
            range: row.string("range_spec"),
            existingPolicy: row.string("existing_policy") ?? "refuse",
            priority: row.int("priority") ?? 0,
            state: row.string("state").flatMap(DownloadState.init(rawValue:)) ?? .failed,
            bytes: row.int64("bytes") ?? 0,
            totalBytes: row.int64("total_bytes"),
            bytesPerSecond: row.double("speed") ?? 0,
            finalPath: row.string("final_path"),
            lastError: row.string("last_error"),
            errorCategory: row.string("error_category"),
            recordText: row.string("record"),
            attempts: row.int("attempts") ?? 0,
            createdAt: Date(timeIntervalSince1970: row.double("created_at") ?? 0),
            updatedAt: Date(timeIntervalSince1970: row.double("updated_at") ?? 0))
    }

    private static func encodeHeaders(_ fields: [HTTPHeaders.Field]) -> String {
        let pairs = fields.map { [$0.name, $0.value] }
        guard let data = try? JSONSerialization.data(withJSONObject: pairs), let text = String(data: data, encoding: .utf8) else { return "[]" }
        return text
    }

    private static func decodeHeaders(_ text: String) -> [HTTPHeaders.Field] {
        guard let pairs = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [[String]] else { return [] }
        return pairs.compactMap { $0.count == 2 ? HTTPHeaders.Field(name: $0[0], value: $0[1]) : nil }
    }
}

/// An item's resume record in the queue store: the runner's `ResumeRecordStore` for queued downloads.
public struct QueueRecordSlot: ResumeRecordStore {
    let store: QueueStore
    let id: Int64
    /// The record column as the claim read it (`.some(nil)`: the row had none).
    var claimed: String??

    init(store: QueueStore, id: Int64, claimed: String?? = .none) {
        self.store = store
        self.id = id
        self.claimed = claimed
    }

    public func load() throws(StoreError) -> ResumeRecord? {
        if case .some(let text) = claimed {
            return try QueueStore.decodeRecord(text, id: id)
        }
        return try store.loadRecord(id)
    }

    public func save(_ record: ResumeRecord) throws(StoreError) {
        try store.saveRecord(id, record)
    }

    public func remove() {
        try? store.saveRecord(id, nil)
    }
}
