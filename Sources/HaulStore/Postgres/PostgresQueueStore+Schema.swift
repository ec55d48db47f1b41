import Foundation
import HaulCore

// The schema as ordered named migrations, applied under an advisory lock so that the workers of a
// fleet starting at once never apply one twice.
extension PostgresQueueStore {
    /// The named migrations, in order. Names never change once released.
    static let migrations: [(name: String, sql: String)] = [
        ("v1-downloads", downloadsTable),
        ("v2-host-slots", hostSlots),
        ("v3-notify-queued", notifyQueued),
        // Adding a download looks for an unfinished one of the same URL into the same directory:
        // by destination alone, each addition looked through every row of that directory.
        ("v4-destination-url", "CREATE INDEX downloads_destination_url ON downloads (destination, url)"),
        // The tokens a claim and an addition leave on their rows, so one run again after a lost
        // COMMIT reply finds what its first run did (see `PostgresQueueStore.claimNext`, `add`).
        // Two columns: a claim of a row just added must not erase the addition's token.
        ("v5-claim-token", "ALTER TABLE downloads ADD COLUMN IF NOT EXISTS claim_token TEXT"),
        ("v6-add-token", "ALTER TABLE downloads ADD COLUMN IF NOT EXISTS add_token TEXT"),
    ]

    /// Names a build on main applied and a later one gave up: known (a database that has one
    /// opens), never applied again. `v5-write-token` added a `write_token` column, since unused.
    static let retiredMigrations: Set<String> = ["v5-write-token"]

    /// An arbitrary constant: the advisory lock every migrating worker takes.
    private static let migrationLock = "4_815_162_342"

    static func migrate(_ database: PGDatabase, location: String) throws(StoreError) {
        do {
            try database.transaction { db in
                try db.query("SELECT pg_advisory_xact_lock(\(migrationLock.replacingOccurrences(of: "_", with: "")))")
                try db.execute("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)")
                let applied = try db.query("SELECT name FROM schema_migrations").rows.compactMap { $0.string("name") }
                let known = Set(migrations.map(\.name)).union(retiredMigrations)
                let unknown = applied.filter { !known.contains($0) }
                guard unknown.isEmpty else {
                    throw StoreError(.corruptStore, MigrationError(unknownMigrations: unknown, path: location).description)
                }
                for migration in migrations where !applied.contains(migration.name) {
                    try db.execute(migration.sql)
                    try db.query(
                        "INSERT INTO schema_migrations (name, applied_at) VALUES ($1, extract(epoch FROM clock_timestamp()))", [migration.name])
                }
            }
        } catch let error as StoreError {
            throw error
        } catch let error as PGError where error.isServerUnavailable {
            throw StoreError(.unavailable, "the queue database \(location) cannot be reached: \(error.message)")
        } catch {
            throw StoreError(.corruptStore, "the queue database \(location) cannot be migrated: \(error)")
        }
    }

    private static let downloadsTable = """
        CREATE TABLE downloads (
            id BIGSERIAL PRIMARY KEY,
            url TEXT NOT NULL,
            method TEXT NOT NULL,
            headers TEXT NOT NULL,
            body BYTEA,
            destination_kind TEXT NOT NULL,
            destination TEXT NOT NULL,
            range_spec TEXT,
            existing_policy TEXT NOT NULL,
            priority INTEGER NOT NULL DEFAULT 0,
            state TEXT NOT NULL,
            bytes BIGINT NOT NULL DEFAULT 0,
            total_bytes BIGINT,
            speed DOUBLE PRECISION NOT NULL DEFAULT 0,
            final_path TEXT,
            last_error TEXT,
            error_category TEXT,
            record TEXT,
            lease_owner TEXT,
            lease_worker TEXT,
            lease_expires TIMESTAMPTZ,
            lease_epoch BIGINT NOT NULL DEFAULT 0,
            attempts INTEGER NOT NULL DEFAULT 0,
            options TEXT,
            host TEXT NOT NULL DEFAULT '',
            not_before TIMESTAMPTZ,
            created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL
        );
        CREATE INDEX downloads_runnable ON downloads (priority DESC, id) WHERE state = 'queued';
        CREATE INDEX downloads_destination ON downloads (destination);
        CREATE INDEX downloads_leased ON downloads (lease_owner) WHERE lease_owner IS NOT NULL;
        CREATE INDEX downloads_transfers ON downloads (lease_expires) WHERE state IN ('running', 'pausing', 'cancelling');
        """

    /// One row per host: what a claim with a per-host limit locks with the item, so the claims of
    /// one host take turns (and those of other hosts, or without a limit, never wait for it). A
    /// count kept in the row would be one row every settlement of the host updates, which made
    /// every transaction of a one-host fleet wait for the one before it (bench/fleet.sh).
    private static let hostSlots = """
        CREATE TABLE host_slots (host TEXT PRIMARY KEY);
        INSERT INTO host_slots (host) SELECT DISTINCT host FROM downloads;
        CREATE INDEX downloads_host_transfers ON downloads (host) WHERE state IN ('running', 'pausing', 'cancelling');
        """

    /// Idle workers wake when an item becomes queued (added, resumed, put back): `NOTIFY`, sent at commit.
    private static let notifyQueued = """
        CREATE FUNCTION haul_notify_queued() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_notify('haul_queue', '');
            RETURN NULL;
        END $$;
        CREATE TRIGGER downloads_notify_queued AFTER INSERT OR UPDATE OF state ON downloads
            FOR EACH ROW WHEN (NEW.state = 'queued') EXECUTE FUNCTION haul_notify_queued();
        """
}
