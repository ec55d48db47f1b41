import HaulCore

extension QueueDialect {
    /// The queue on PostgreSQL, shared by a fleet: the protocol of a work table on a real engine
    /// (River, Oban, Que). A claim locks the best queued row it can (`FOR UPDATE SKIP LOCKED`:
    /// rows another worker is claiming are passed over, never waited for) and leases it under a
    /// new epoch; lease times are the server's clock (`now()`), never a worker's; a list
    /// parameter is an array (`= ANY`).
    static let postgres: QueueDialect = {
        let now = "extract(epoch FROM clock_timestamp())"
        let transfers = QueueDialect.transferStates
        let candidates = """
            WHERE d.state = 'queued' AND (d.not_before IS NULL OR d.not_before <= now())
                AND ($1::bigint[] IS NULL OR d.id = ANY ($1::bigint[])) AND NOT (d.host = ANY ($4::text[]))
            ORDER BY d.priority DESC, d.id LIMIT $2 OFFSET $3
            """
        let releaseLease = "lease_owner = NULL, lease_worker = NULL, lease_expires = NULL"
        let leasing = """
            UPDATE downloads SET state = 'running', lease_owner = $1, lease_worker = $2, claim_token = $4,
                lease_expires = now() + make_interval(secs => $3::double precision), lease_epoch = lease_epoch + 1,
                attempts = attempts + 1, last_error = NULL, error_category = NULL, not_before = NULL, updated_at = \(now)
            """
        return QueueDialect(
            now: now,
            insertLock: "SELECT pg_advisory_xact_lock(hashtext('haul-add'))",
            noteHost: "INSERT INTO host_slots (host) VALUES ($1) ON CONFLICT (host) DO NOTHING",
            loadLocking: "SELECT * FROM downloads WHERE id = $1 FOR UPDATE",
            loadManyLocking: "SELECT * FROM downloads WHERE id = ANY ($1::bigint[]) ORDER BY id FOR UPDATE",
            // Among the owner's few leased rows (the `downloads_leased` index).
            claimedEarlier: "SELECT * FROM downloads WHERE lease_owner = $1 AND claim_token = $2 AND state IN (\(transfers))",
            nextQueued: "SELECT d.id, d.host FROM downloads d \(candidates) FOR UPDATE OF d SKIP LOCKED",
            // The host's row is locked before its transfers are counted (`lease`, a statement begun
            // after the lock): the count sees every claim of the host committed before (READ
            // COMMITTED), so two workers never both take a host's last slot.
            nextQueuedLockingHost: "SELECT d.id, d.host FROM downloads d JOIN host_slots h ON h.host = d.host \(candidates) FOR UPDATE OF d, h SKIP LOCKED",
            lease: """
                \(leasing) WHERE id = $5 AND state = 'queued'
                    AND ($6::bigint IS NULL OR (SELECT count(*) FROM downloads r WHERE r.host = $7 AND r.state IN (\(transfers))) < $6::bigint)
                RETURNING *
                """,
            leaseMany: "\(leasing) WHERE id = ANY ($5::bigint[]) AND state = 'queued' RETURNING *",
            renew: """
                UPDATE downloads SET lease_expires = now() + make_interval(secs => $2::double precision)
                FROM unnest($3::bigint[], $4::bigint[]) AS held (id, epoch)
                WHERE downloads.lease_owner = $1 AND downloads.id = held.id AND downloads.lease_epoch = held.epoch
                RETURNING downloads.id, downloads.state
                """,
            pendingAmong: """
                SELECT 1 AS pending FROM downloads WHERE state IN ('queued', \(transfers))
                    AND ($1::bigint[] IS NULL OR id = ANY ($1::bigint[])) LIMIT 1
                """,
            recoveryCandidates: """
                SELECT id, state, lease_owner, true AS expired FROM downloads
                WHERE state NOT IN (\(QueueDialect.atRestStates)) AND (lease_expires IS NULL OR lease_expires < now())
                FOR UPDATE SKIP LOCKED
                """,
            releaseLease: releaseLease,
            settle: """
                UPDATE downloads SET state = $1, last_error = $2, error_category = $3, updated_at = \(now),
                    lease_owner = CASE WHEN $4::boolean THEN NULL ELSE lease_owner END,
                    lease_worker = CASE WHEN $4::boolean THEN NULL ELSE lease_worker END,
                    lease_expires = CASE WHEN $4::boolean THEN NULL ELSE lease_expires END,
                    not_before = now() + make_interval(secs => $5::double precision),
                    bytes = COALESCE($7::bigint, bytes), total_bytes = COALESCE($7::bigint, total_bytes),
                    speed = CASE WHEN $7::bigint IS NULL THEN speed ELSE 0 END, final_path = COALESCE($8::text, final_path),
                    record = CASE WHEN $7::bigint IS NULL THEN record ELSE NULL END
                WHERE id = $6
                """,
            progressEpoch: "$6::bigint",
            saveRecord: "UPDATE downloads SET record = $1 WHERE id = $2 AND ($3::bigint IS NULL OR lease_epoch = $3::bigint)",
            saveRecords: """
                UPDATE downloads SET record = r.record FROM unnest($1::bigint[], $2::text[], $3::bigint[]) AS r (id, record, epoch)
                WHERE downloads.id = r.id AND (r.epoch < 0 OR downloads.lease_epoch = r.epoch)
                RETURNING downloads.id
                """,
            migrator: postgresMigrator)
    }()

    /// The PostgreSQL schema, as ordered named migrations, applied under an advisory lock so that
    /// the workers of a fleet starting at once never apply one twice. `v5-write-token` (a build on
    /// main applied it, a later one gave it up: its `write_token` column is unused) is known,
    /// never applied again.
    private static let postgresMigrator: Migrator = {
        var migrator = Migrator(lock: "SELECT pg_advisory_xact_lock(4815162342)", retired: ["v5-write-token"])
        migrator.registerMigration("v1-downloads") { db in try db.execute(downloadsTable) }
        migrator.registerMigration("v2-host-slots") { db in try db.execute(hostSlots) }
        migrator.registerMigration("v3-notify-queued") { db in try db.execute(notifyQueued) }
        // Adding a download looks for an unfinished one of the same URL into the same directory:
        // by destination alone, each addition looked through every row of that directory.
        migrator.registerMigration("v4-destination-url") { db in try db.execute("CREATE INDEX downloads_destination_url ON downloads (destination, url)") }
        // The tokens a claim and an addition leave on their rows, so one run again after a lost
        // COMMIT reply finds what its first run did (see `QueueStore.claimNext`, `add`). Two
        // columns: a claim of a row just added must not erase the addition's token.
        migrator.registerMigration("v5-claim-token") { db in try db.execute("ALTER TABLE downloads ADD COLUMN IF NOT EXISTS claim_token TEXT") }
        migrator.registerMigration("v6-add-token") { db in try db.execute("ALTER TABLE downloads ADD COLUMN IF NOT EXISTS add_token TEXT") }
        // A priority is a 64-bit integer on both databases (SQLite's INTEGER is): 32 bits refused
        // what the other store keeps.
        migrator.registerMigration("v7-priority-bigint") { db in try db.execute("ALTER TABLE downloads ALTER COLUMN priority TYPE BIGINT") }
        // `haul serve`'s event journal (see `QueueStore+Events`): a completion at most once per item.
        migrator.registerMigration("v8-serve-events") { db in
            try db.execute(
                """
                CREATE TABLE serve_events (
                    id BIGSERIAL PRIMARY KEY, item_id BIGINT NOT NULL, method TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL);
                CREATE UNIQUE INDEX serve_events_completion ON serve_events (item_id) WHERE method = 'aria2.onDownloadComplete';
                """)
        }
        // A move under way (`MoveIntent`, JSON): whoever opens the download after a crash in the
        // middle of a move leaves one name per file.
        migrator.registerMigration("v9-move-intent") { db in try db.execute("ALTER TABLE downloads ADD COLUMN IF NOT EXISTS move_intent TEXT") }
        return migrator
    }()

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
