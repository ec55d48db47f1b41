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
    let lastRecovery = Mutex<Double>(0)
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

    // MARK: plumbing

    func read<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws(StoreError) -> T {
        do {
            return try database.read(body)
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    /// Every change of the store passes here, one committed transaction per call.
    func write<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws(StoreError) -> T {
        let result: T
        do {
            result = try database.write(body)
        } catch {
            throw Self.storeError(error, path: path)
        }
        // Only after a commit: a transaction that threw was rolled back and left nothing to recover.
        CrashPoint.reach(.betweenQueueCommits)
        return result
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

    // MARK: rows

    static func load(_ db: SQLiteConnection, id: Int64) throws -> StoredDownload? {
        try db.query("SELECT * FROM downloads WHERE id = ?", [.integer(id)]).first.map(decode)
    }

    static func decode(_ row: Row) -> StoredDownload {
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

    static func encodeHeaders(_ fields: [HTTPHeaders.Field]) -> String {
        let pairs = fields.map { [$0.name, $0.value] }
        guard let data = try? JSONSerialization.data(withJSONObject: pairs), let text = String(data: data, encoding: .utf8) else { return "[]" }
        return text
    }

    private static func decodeHeaders(_ text: String) -> [HTTPHeaders.Field] {
        guard let pairs = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [[String]] else { return [] }
        return pairs.compactMap { $0.count == 2 ? HTTPHeaders.Field(name: $0[0], value: $0[1]) : nil }
    }
}
