import Foundation
import HaulCore
import HaulStore
import HaulTestSupport
import Testing

/// The two stores one conformance suite runs against, as the transport suite runs both engines.
enum StoreKind: String, CaseIterable, CustomStringConvertible, Sendable {
    case sqlite
    case postgres

    var description: String { rawValue }
}

/// A fresh store of one kind: a temporary state directory, or a fresh database of its own in the
/// PostgreSQL cluster this test process shares (`PostgresTestDatabase`, dropped in `stop()`), with
/// a way to look under the hood of each. No test here stops, pauses or reconfigures the server; a
/// test that does starts a private `PostgresCluster`.
///
/// The shared suite reaches the stores only through `QueueStorage` and the helpers here, so that a
/// change of the protocol's signatures (a lease value instead of an epoch beside an id) is a change
/// of these few lines, not of every test.
final class StoreHarness: Sendable {
    let kind: StoreKind
    let directory: TemporaryDirectory
    let database: PostgresTestDatabase?

    init(_ kind: StoreKind) throws {
        self.kind = kind
        directory = try TemporaryDirectory(prefix: "haul-conformance")
        database = kind == .postgres ? try PostgresTestDatabase() : nil
    }

    /// A store on the same data, as another process (or machine) opens it: its first claim looks
    /// for abandoned items (later ones only every second or two).
    ///
    /// `leaseSeconds`: the PostgreSQL store honours it; the SQLite store takes its lease length
    /// only from `HAUL_LEASE_SECONDS` today (the lead is making it honour this too), so a test
    /// that needs a short lease marks the SQLite case as a known issue.
    func open(leaseSeconds: Double = 20) throws -> any QueueStorage {
        if let database { return try QueueStore(postgres: database.uri, leaseSeconds: leaseSeconds, reconnectSeconds: 5) }
        return try QueueStore(directory: directory.path, leaseSeconds: leaseSeconds)
    }

    /// Runs SQL on the store's database directly (`?`-free SQL only: it must read on both).
    func sql(_ text: String) throws {
        if let database {
            try database.psql(text)
        } else {
            try SQLiteConnection(path: directory.file(QueueStore.fileName)).execute(text)
        }
    }

    /// The text of `column` of item `id`, as the database holds it (nil for NULL, or no such item):
    /// what the store wrote, read past its own decoding. `lease_expires` is seconds since 1970 on both.
    func column(_ column: String, of id: Int64) throws -> String? {
        if let database {
            // psql prints NULL and '' alike: a prefix tells them apart.
            let value = column == "lease_expires" ? "extract(epoch FROM lease_expires)" : column
            let text = try database.psql("SELECT CASE WHEN \(value) IS NULL THEN 'null' ELSE 'value:' || (\(value))::text END FROM downloads WHERE id = \(id)")
            return text.hasPrefix("value:") ? String(text.dropFirst("value:".count)) : nil
        }
        let rows = try SQLiteConnection(path: directory.file(QueueStore.fileName)).query("SELECT \(column) FROM downloads WHERE id = \(id)")
        switch rows.first?[0] {
        case .integer(let value): return String(value)
        case .real(let value): return String(value)
        case .text(let value): return value
        case .blob(let bytes): return String(decoding: bytes, as: UTF8.self)
        case .null, .integers, .texts, nil: return nil
        }
    }

    /// Who holds item `id`'s lease (`LeaseOwner.encoded`) and until when (seconds since 1970).
    func lease(of id: Int64) throws -> (owner: String?, expires: Double?) {
        (try column("lease_owner", of: id), try column("lease_expires", of: id).flatMap(Double.init))
    }

    /// How many items each owner holds a lease on, by `LeaseOwner.encoded`.
    func leaseCounts(of ids: [Int64]) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for id in ids {
            if let owner = try lease(of: id).owner { counts[owner, default: 0] += 1 }
        }
        return counts
    }

    /// Every lease ends now, as if its owner stopped renewing it long ago.
    func expireLeases() throws {
        try expireLeases(where: "lease_expires IS NOT NULL")
    }

    /// The lease of item `id` ends now.
    func expireLease(of id: Int64) throws {
        try expireLeases(where: "id = \(id) AND lease_expires IS NOT NULL")
    }

    /// Every lease `owner` holds ends now.
    func expireLeases(of owner: LeaseOwner) throws {
        try expireLeases(where: "lease_owner = '\(owner.encoded)'")
    }

    private func expireLeases(where condition: String) throws {
        if kind == .postgres {
            try sql("UPDATE downloads SET lease_expires = now() - interval '1 second' WHERE \(condition)")
        } else {
            try sql("UPDATE downloads SET lease_expires = 1 WHERE \(condition)")
        }
    }

    /// Plants secrets in item `id` behind the store's back (a row written by hand, or one a store
    /// that keeps secrets wrote): a password in its URL and a header. A shared store refuses both at
    /// `add`, so this is how its scrub on settling is reached at all.
    func plantSecrets(in id: Int64, url: String, header: (name: String, value: String)) throws {
        let headers = "[[\"\(header.name)\",\"\(header.value)\"]]"
        try sql("UPDATE downloads SET url = '\(url)', headers = '\(headers)' WHERE id = \(id)")
    }

    /// Adds a download of `name` that carries secrets (a password in its URL, an `X-Api-Key`
    /// header), as each store can come to hold them: a local store is given them by `add`; a shared
    /// one refuses them there, so they are planted in its row (see `plantSecrets`).
    func addCarryingSecrets(_ store: any QueueStorage, _ name: String) throws -> Int64 {
        let url = "http://alice:hunter2@127.0.0.1:1/\(name)"
        var new = download(name)
        if store.isShared {
            let id = try #require(try store.add([new]).first)
            try plantSecrets(in: id, url: url, header: ("X-Api-Key", "KEY-1"))
            return id
        }
        new.url = url
        new.headers = [HTTPHeaders.Field(name: "X-Api-Key", value: "KEY-1")]
        return try #require(try store.add([new]).first)
    }

    func stop() {
        database?.drop()
        directory.remove()
    }

    /// A download to a file in the harness directory, from `host`.
    func download(_ name: String, host: String = "127.0.0.1", priority: Int = 0, paused: Bool = false) -> NewDownload {
        NewDownload(
            url: "http://\(host):1/\(name)", destinationKind: .file, destination: directory.file("out/\(name)"), priority: priority, paused: paused)
    }
}

/// The kind of `StoreError` `body` throws, nil when it returns (an error of another type is
/// recorded as an issue).
func storeErrorKind(sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) -> StoreError.Kind? {
    do {
        try body()
        return nil
    } catch let error as StoreError {
        return error.kind
    } catch {
        Issue.record("expected a StoreError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

// MARK: - Settlements, renewals, progress and records as a transfer's owner makes them

/// Settlements as a transfer's owner makes them. `fenced` names the lease the claim took;
/// `unfenced` names none (an owner that kept no lease, or a command).
enum Settle {
    /// The end of `item`'s transfer, under the lease its claim took.
    static func fenced(
        _ item: StoredDownload, _ input: LifecycleInput, error: (category: String, message: String)? = nil,
        finished: (bytes: Int64, path: String)? = nil, retryAfter: Double? = nil
    ) -> QueueSettlement {
        QueueSettlement(id: item.id, input: input, error: error, finished: finished, lease: item.lease, retryAfter: retryAfter)
    }

    /// `item` completed with `bytes` at `path`, under the lease its claim took.
    static func completed(_ item: StoredDownload, bytes: Int64 = 1, path: String = "/done") -> QueueSettlement {
        fenced(item, .transferCompleted, finished: (bytes, path))
    }

    /// The end of item `id`'s transfer, naming no lease.
    static func unfenced(
        _ id: Int64, _ input: LifecycleInput, error: (category: String, message: String)? = nil, finished: (bytes: Int64, path: String)? = nil
    ) -> QueueSettlement {
        QueueSettlement(id: id, input: input, error: error, finished: finished)
    }
}

extension QueueStorage {
    /// Settles `settling`, then claims the best queued item (among `ids`) for `owner`.
    func claimOne(
        for owner: LeaseOwner, among ids: Set<Int64>? = nil, settling: [QueueSettlement] = [], rules: ClaimRules = ClaimRules()
    ) throws(StoreError) -> StoredDownload? {
        try claimNext(for: owner, among: ids, settling: settling, rules: rules)
    }

    /// Settles `settlements` and claims nothing (a draining worker).
    func settleOnly(for owner: LeaseOwner, _ settlements: [QueueSettlement]) throws(StoreError) {
        _ = try claimNext(for: owner, among: [], settling: settlements, rules: ClaimRules())
    }

    /// Renews the leases of `items` as their claims took them.
    func renew(for owner: LeaseOwner, holding items: [StoredDownload]) throws(StoreError) -> [Int64: DownloadState] {
        try renewLeases(items.map { Lease(item: $0.id, owner: owner, epoch: $0.leaseEpoch) })
    }

    /// Progress of `claim`'s item, fenced by the lease the claim took.
    func writeProgress(
        bytes: Int64, totalBytes: Int64? = nil, bytesPerSecond: Double = 1, finalPath: String? = nil, under claim: StoredDownload
    ) throws(StoreError) {
        let lease = claim.lease ?? Lease(item: claim.id, owner: LeaseOwner(), epoch: claim.leaseEpoch)
        try updateProgress(lease, bytes: bytes, totalBytes: totalBytes, bytesPerSecond: bytesPerSecond, finalPath: finalPath)
    }

    /// The record slot of `item` as its claim took it: fenced, and keeping a finished record until
    /// the completing settlement.
    func claimedRecord(_ item: StoredDownload) -> any ResumeRecordStore {
        resumeRecord(for: item, owner: item.leaseOwner ?? LeaseOwner())
    }

    /// The record slot of item `id` outside any lease.
    func record(of id: Int64) -> any ResumeRecordStore {
        resumeRecord(id)
    }

    /// Applies `input` to `id` with a failure's category and message.
    @discardableResult
    func apply(_ input: LifecycleInput, to id: Int64, error: (category: String, message: String)) throws(StoreError) -> (StoredDownload, LifecycleAction) {
        try apply(input, to: id, error: error, finished: nil, owner: nil)
    }

    /// Applies `input` to `id` as `owner`, refused once its lease is another's.
    @discardableResult
    func apply(_ input: LifecycleInput, to id: Int64, as owner: LeaseOwner) throws(StoreError) -> (StoredDownload, LifecycleAction) {
        try apply(input, to: id, error: nil, finished: nil, owner: owner)
    }
}

/// Claims seen by several threads.
final class ClaimLog: @unchecked Sendable {
    // Only touched under `lock`.
    private let lock = NSLock()
    private var ids: [Int64] = []

    func append(_ id: Int64) { lock.withLock { ids.append(id) } }
    func sorted() -> [Int64] { lock.withLock { ids.sorted() } }
    /// The ids in the order they were appended.
    func all() -> [Int64] { lock.withLock { ids } }
}
