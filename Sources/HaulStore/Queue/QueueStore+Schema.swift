import HaulCore

// Schema changes are ordered named migrations, never a rewrite of the table.
extension QueueStore {
    /// The schema, as ordered named migrations.
    static let migrator: Migrator = {
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
            for row in try db.query("SELECT id, url FROM downloads") {
                guard let id = row.int64("id"), let url = row.string("url") else { continue }
                try db.execute("UPDATE downloads SET host = ? WHERE id = ?", [.text(HostKey.of(url)), .integer(id)])
            }
        }
        migrator.registerMigration("v5-destination-url") { db in
            // Adding a download looks for an unfinished one of the same URL into the same
            // directory: by destination alone, a batch of 10,000 into one directory looked through
            // every row added before each new one (a tenth of a second per file at the end).
            try db.execute("CREATE INDEX downloads_destination_url ON downloads(destination, url)")
        }
        return migrator
    }()
}
