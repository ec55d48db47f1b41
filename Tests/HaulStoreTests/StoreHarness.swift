import Foundation
import HaulCore
import HaulStore
import HaulTestSupport

/// The two stores one conformance suite runs against, as the transport suite runs both engines.
enum StoreKind: String, CaseIterable, CustomStringConvertible, Sendable {
    case sqlite
    case postgres

    var description: String { rawValue }
}

/// A fresh store of one kind: a temporary state directory, or a private PostgreSQL cluster (its
/// own server, stopped by PID in `stop()`), with a way to look under the hood of each.
final class StoreHarness: Sendable {
    let kind: StoreKind
    let directory: TemporaryDirectory
    let cluster: PostgresCluster?

    init(_ kind: StoreKind) throws {
        self.kind = kind
        directory = try TemporaryDirectory(prefix: "haul-conformance")
        cluster = kind == .postgres ? try PostgresCluster() : nil
    }

    /// A store on the same data, as another process (or machine) opens it.
    func open(leaseSeconds: Double = 20) throws -> any QueueStorage {
        if let cluster { return try QueueStore(postgres: cluster.uri(), leaseSeconds: leaseSeconds, reconnectSeconds: 5) }
        return try QueueStore(directory: directory.path)
    }

    /// Runs SQL on the store's database directly (`?`-free SQL only: it must read on both).
    func sql(_ text: String) throws {
        if let cluster {
            try cluster.psql(text)
        } else {
            try SQLiteConnection(path: directory.file(QueueStore.fileName)).execute(text)
        }
    }

    /// Every lease ends now, as if its owner stopped renewing it long ago.
    func expireLeases() throws {
        if kind == .postgres {
            try sql("UPDATE downloads SET lease_expires = now() - interval '1 second' WHERE lease_expires IS NOT NULL")
        } else {
            try sql("UPDATE downloads SET lease_expires = 1 WHERE lease_expires IS NOT NULL")
        }
    }

    func stop() {
        cluster?.stop()
        directory.remove()
    }

    /// A download to a file in the harness directory, from `host`.
    func download(_ name: String, host: String = "127.0.0.1", priority: Int = 0) -> NewDownload {
        NewDownload(url: "http://\(host):1/\(name)", destinationKind: .file, destination: directory.file("out/\(name)"), priority: priority)
    }
}

/// The kind of `StoreError` `body` throws, nil when it returns.
func storeErrorKind(_ body: () throws -> Void) -> StoreError.Kind? {
    do {
        try body()
        return nil
    } catch let error as StoreError {
        return error.kind
    } catch {
        return .io
    }
}
