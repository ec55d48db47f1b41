import HaulCore

extension QueueDialect {
    /// The queue on SQLite: one machine, whose processes take turns on the file (a write
    /// transaction is exclusive, so nothing is locked row by row). Times are seconds since 1970 by
    /// the machine's clock; a list parameter is a JSON array, read with `json_each`.
    static let sqlite: QueueDialect = {
        let now = "((julianday('now') - 2440587.5) * 86400.0)"
        let transfers = QueueDialect.transferStates
        let nextQueued = """
            SELECT id, host FROM downloads
            WHERE state = 'queued' AND (not_before IS NULL OR not_before <= \(now))
                AND ($1 IS NULL OR id IN (SELECT value FROM json_each($1))) AND host NOT IN (SELECT value FROM json_each($4))
            ORDER BY priority DESC, id LIMIT $2 OFFSET $3
            """
        let releaseLease = "lease_owner = NULL, lease_worker = NULL, lease_expires = NULL"
        let leasing = """
            UPDATE downloads SET state = 'running', lease_owner = $1, lease_worker = $2, claim_token = $4,
                lease_expires = \(now) + $3, lease_epoch = lease_epoch + 1, attempts = attempts + 1, last_error = NULL,
                error_category = NULL, not_before = NULL, updated_at = \(now)
            """
        return QueueDialect(
            now: now,
            insertLock: nil,
            noteHost: nil,
            loadLocking: "SELECT * FROM downloads WHERE id = $1",
            loadManyLocking: "SELECT * FROM downloads WHERE id IN (SELECT value FROM json_each($1)) ORDER BY id",
            claimedEarlier: "SELECT * FROM downloads WHERE lease_owner = $1 AND claim_token = $2 AND state IN (\(transfers))",
            nextQueued: nextQueued,
            nextQueuedLockingHost: nextQueued,
            lease: """
                \(leasing) WHERE id = $5 AND state = 'queued'
                    AND ($6 IS NULL OR (SELECT count(*) FROM downloads r WHERE r.host = $7 AND r.state IN (\(transfers))) < $6)
                RETURNING *
                """,
            leaseMany: "\(leasing) WHERE id IN (SELECT value FROM json_each($5)) AND state = 'queued' RETURNING *",
            renew: """
                UPDATE downloads SET lease_expires = \(now) + $2
                WHERE lease_owner = $1
                    AND (id, lease_epoch) IN (SELECT i.value, e.value FROM json_each($3) i JOIN json_each($4) e ON e.key = i.key)
                RETURNING id, state
                """,
            pendingAmong: """
                SELECT 1 AS pending FROM downloads WHERE state IN ('queued', \(transfers))
                    AND ($1 IS NULL OR id IN (SELECT value FROM json_each($1))) LIMIT 1
                """,
            recoveryCandidates: """
                SELECT id, state, lease_owner, (lease_expires IS NULL OR lease_expires < \(now)) AS expired FROM downloads
                WHERE state IS NULL OR state NOT IN (\(QueueDialect.atRestStates))
                """,
            releaseLease: releaseLease,
            settle: """
                UPDATE downloads SET state = $1, last_error = $2, error_category = $3, updated_at = \(now),
                    lease_owner = CASE WHEN $4 THEN NULL ELSE lease_owner END,
                    lease_worker = CASE WHEN $4 THEN NULL ELSE lease_worker END,
                    lease_expires = CASE WHEN $4 THEN NULL ELSE lease_expires END, not_before = \(now) + $5,
                    bytes = COALESCE($7, bytes), total_bytes = COALESCE($7, total_bytes), speed = CASE WHEN $7 IS NULL THEN speed ELSE 0 END,
                    final_path = COALESCE($8, final_path), record = CASE WHEN $7 IS NULL THEN record ELSE NULL END
                WHERE id = $6
                """,
            progressEpoch: "$6",
            saveRecord: "UPDATE downloads SET record = $1 WHERE id = $2 AND ($3 IS NULL OR lease_epoch = $3)",
            saveRecords: """
                UPDATE downloads SET record = r.record
                FROM (SELECT i.value AS id, t.value AS record, e.value AS epoch
                    FROM json_each($1) i JOIN json_each($2) t ON t.key = i.key JOIN json_each($3) e ON e.key = i.key) AS r
                WHERE downloads.id = r.id AND (r.epoch < 0 OR downloads.lease_epoch = r.epoch)
                RETURNING downloads.id
                """,
            migrator: sqliteMigrator)
    }()

    /// The SQLite schema, as ordered named migrations.
    private static let sqliteMigrator: Migrator = {
        var migrator = Migrator()
        migrator.registerMigration("v1-downloads") { db in
            try db.execute(
                """
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
        migrator.registerMigration("v3-options") { db in
            // The rest of a download's request, typed (JSON of `StoredOptions`); NULL for rows
            // added before, which keep running with the run's settings.
            try db.execute("ALTER TABLE downloads ADD COLUMN options TEXT")
        }
        migrator.registerMigration("v4-fleet") { db in
            // The lease's epoch (the fencing token every write of a transfer names), the host of
            // each item (the per-host limit of a claim) and when a put-back item may run again.
            try db.execute(
                """
                ALTER TABLE downloads ADD COLUMN lease_epoch INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE downloads ADD COLUMN host TEXT NOT NULL DEFAULT '';
                ALTER TABLE downloads ADD COLUMN not_before REAL;
                CREATE INDEX downloads_host ON downloads(host, state);
                """)
            for row in try db.rows("SELECT id, url FROM downloads", []) {
                guard let id = row.int64("id"), let url = row.string("url") else { continue }
                try db.run("UPDATE downloads SET host = $1 WHERE id = $2", [.text(HostKey.of(url)), .integer(id)])
            }
        }
        migrator.registerMigration("v5-destination-url") { db in
            // Adding a download looks for an unfinished one of the same URL into the same
            // directory: by destination alone, a batch of 10,000 into one directory looked through
            // every row added before each new one (a tenth of a second per file at the end).
            try db.execute("CREATE INDEX downloads_destination_url ON downloads(destination, url)")
        }
        migrator.registerMigration("v6-worker-tokens") { db in
            // The columns PostgreSQL's schema has, so that both run the same statements: the
            // worker's name, and the tokens a claim and an addition leave on their rows.
            try db.execute(
                """
                ALTER TABLE downloads ADD COLUMN lease_worker TEXT;
                ALTER TABLE downloads ADD COLUMN claim_token TEXT;
                ALTER TABLE downloads ADD COLUMN add_token TEXT;
                """)
        }
        migrator.registerMigration("v7-serve-events") { db in
            // `haul serve`'s event journal (see `QueueStore+Events`): ids never reused
            // (AUTOINCREMENT), a completion at most once per item.
            try db.execute(
                """
                CREATE TABLE serve_events (
                    id INTEGER PRIMARY KEY AUTOINCREMENT, item_id INTEGER NOT NULL, method TEXT NOT NULL, created_at REAL NOT NULL);
                CREATE UNIQUE INDEX serve_events_completion ON serve_events (item_id) WHERE method = 'aria2.onDownloadComplete';
                """)
        }
        migrator.registerMigration("v8-move-intent") { db in
            // A move under way (`MoveIntent`, JSON): whoever opens the download after a crash in
            // the middle of a move leaves one name per file.
            try db.execute("ALTER TABLE downloads ADD COLUMN move_intent TEXT")
        }
        return migrator
    }()
}
