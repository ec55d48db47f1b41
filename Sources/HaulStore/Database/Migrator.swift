import Foundation

/// A connection a ``Migrator`` applies migrations on: SQLite's or PostgreSQL's.
package protocol MigrationConnection: StoreConnection {
    /// Where the database is, for messages.
    var location: String { get }
    /// Runs `body` in a transaction: committed if it returns, rolled back if it throws.
    func transaction<T>(_ body: () throws -> T) throws -> T
    /// Runs several `;`-separated statements without parameters (a migration's DDL).
    func execute(_ sql: String) throws
    /// How many migrations are applied, for a database that keeps the count itself too (SQLite's
    /// `user_version`); nothing elsewhere.
    func noteMigrationCount(_ count: Int) throws
    /// Whether the database has a table of this name.
    func hasTable(_ name: String) throws -> Bool
}

/// Ordered, named schema migrations, each applied once, in registration order, inside its own
/// transaction: the one mechanism of both queue databases (see `QueueDialect.migrator`).
///
/// Applied migrations are recorded in `schema_migrations(name, applied_at)` (and on SQLite,
/// `PRAGMA user_version` is set to how many are applied). Migrating an up-to-date database changes
/// nothing. A database that records a migration this build does not know was written by a newer
/// Haul and is refused with a ``MigrationError`` before anything is changed; `retired` names are
/// known without being applied (a migration a build released and a later one gave up). Workers
/// that migrate one database at once take turns: SQLite's write transaction is exclusive, and on
/// PostgreSQL each transaction first takes `lock` (an advisory lock).
///
/// ```swift
/// var migrator = Migrator()
/// migrator.registerMigration("v1-create-downloads") { db in
///     try db.execute("CREATE TABLE downloads(id INTEGER PRIMARY KEY, url TEXT NOT NULL)")
/// }
/// try migrator.migrate(queue)
/// ```
package struct Migrator: Sendable {
    private struct Migration: Sendable {
        let name: String
        let migrate: @Sendable (any MigrationConnection) throws -> Void
    }

    private var migrations: [Migration] = []
    /// Run first in each migration's transaction (PostgreSQL's advisory lock), nil for none.
    private let lock: String?
    /// Names known without being applied.
    private let retired: Set<String>

    /// Creates a migrator with no migrations.
    package init(lock: String? = nil, retired: Set<String> = []) {
        self.lock = lock
        self.retired = retired
    }

    /// The registered migration names, in the order they apply.
    package var migrationNames: [String] {
        migrations.map(\.name)
    }

    /// Adds a migration after those already registered. Names must be unique and must never change
    /// once released: they are how a database remembers what it has.
    package mutating func registerMigration(
        _ name: String, _ migrate: @escaping @Sendable (any MigrationConnection) throws -> Void
    ) {
        precondition(!migrations.contains { $0.name == name }, "migration \(name) is registered twice")
        migrations.append(Migration(name: name, migrate: migrate))
    }

    /// Applies the pending migrations through `queue`.
    package func migrate(_ queue: DatabaseQueue) throws {
        try queue.writeWithoutTransaction { db in
            try migrate(db)
        }
    }

    /// Applies the pending migrations to `db`, each in its own transaction (a savepoint if `db` is
    /// an SQLite connection already in one).
    package func migrate(_ db: some MigrationConnection) throws {
        for migration in migrations {
            try db.transaction {
                if let lock { try db.execute(lock) }
                // Read inside the write transaction, so another process migrating the same database
                // at the same time cannot make this one apply a migration twice.
                let applied = try Self.appliedNames(db, creatingTable: true)
                try checkKnown(applied, path: db.location)
                guard !applied.contains(migration.name) else { return }
                try migration.migrate(db)
                try db.run(
                    "INSERT INTO schema_migrations (name, applied_at) VALUES ($1, $2)",
                    [.text(migration.name), .real(Date().timeIntervalSince1970)])
                try db.noteMigrationCount(applied.count + 1)
            }
        }
        // With no migration registered the loop did not look: still refuse a newer database.
        if migrations.isEmpty {
            try checkKnown(try Self.appliedNames(db, creatingTable: false), path: db.location)
        }
    }

    /// The names of the migrations recorded in `db`, in the order they were applied.
    package func appliedMigrations(_ db: some MigrationConnection) throws -> [String] {
        try Self.appliedNames(db, creatingTable: false)
    }

    /// Whether `db` has every registered migration applied.
    package func isUpToDate(_ db: some MigrationConnection) throws -> Bool {
        let applied = Set(try Self.appliedNames(db, creatingTable: false))
        return migrations.allSatisfy { applied.contains($0.name) }
    }

    private func checkKnown(_ applied: [String], path: String) throws {
        let known = Set(migrations.map(\.name)).union(retired)
        let unknown = applied.filter { !known.contains($0) }
        guard unknown.isEmpty else {
            throw MigrationError(unknownMigrations: unknown, path: path)
        }
    }

    private static func appliedNames(_ db: some MigrationConnection, creatingTable: Bool) throws -> [String] {
        if creatingTable {
            try db.execute("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY NOT NULL, applied_at DOUBLE PRECISION NOT NULL)")
        } else if try !db.hasTable("schema_migrations") {
            return []
        }
        // A name that reads back NULL or as another class is a damaged row; skipping it could make
        // the migrator run an applied migration again.
        return try db.rows("SELECT name FROM schema_migrations ORDER BY applied_at, name", []).map {
            row throws(SQLiteError) in try row.requiredString("name")
        }
    }
}

/// A database that cannot be migrated by this build of Haul.
package struct MigrationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Migration names recorded in the database that this build does not know.
    package let unknownMigrations: [String]
    /// The database file.
    package let path: String

    /// Creates the error for a database at `path` that records `unknownMigrations`.
    package init(unknownMigrations: [String], path: String) {
        self.unknownMigrations = unknownMigrations
        self.path = path
    }

    package var description: String {
        "the database at \(path) was written by a newer version of Haul (it has migrations this version "
            + "does not know: \(unknownMigrations.joined(separator: ", "))); upgrade Haul, or use a different "
            + "database"
    }
}
