import Foundation
import HaulStore

/// Where a queue's store is: a state directory (SQLite, one machine) or a PostgreSQL database
/// that a fleet of machines shares (`postgresql://USER@HOST:PORT/DB`, a libpq connection URI).
///
/// ```swift
/// let queue = try DownloadQueue(store: .postgres("postgresql://haul@db.internal:5432/haul"))
/// ```
public struct QueueStoreLocation: Sendable, Equatable, CustomStringConvertible {
    enum Kind: Sendable, Equatable {
        case directory(String)
        case postgres(String)
    }

    let kind: Kind

    /// A state directory: the SQLite store `haul.sqlite` inside it.
    public static func directory(_ path: String) -> QueueStoreLocation {
        QueueStoreLocation(kind: .directory(path))
    }

    /// A PostgreSQL database, by libpq connection URI (`postgresql://` or `postgres://`).
    public static func postgres(_ uri: String) -> QueueStoreLocation {
        QueueStoreLocation(kind: .postgres(uri))
    }

    private init(kind: Kind) {
        self.kind = kind
    }

    /// A `--state` value: a `postgresql://` or `postgres://` URI names a database, anything else
    /// a directory.
    public init(_ state: String) {
        kind = QueueStore.isConnectionURI(state) ? .postgres(state) : .directory(state)
    }

    /// Whether machines other than this one may share the store.
    public var isShared: Bool {
        if case .postgres = kind { return true }
        return false
    }

    /// The directory, or the URI without its password.
    public var description: String {
        switch kind {
        case .directory(let path): return path
        case .postgres(let uri): return Redaction.withoutPassword(uri)
        }
    }

    func open() throws(DownloadError) -> any QueueStorage {
        do throws(StoreError) {
            switch kind {
            case .directory(let path): return try QueueStore(directory: path)
            case .postgres(let uri): return try QueueStore(postgres: uri)
            }
        } catch {
            throw DownloadError(.io, error)
        }
    }
}
