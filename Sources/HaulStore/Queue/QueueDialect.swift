import HaulCore

/// What one queue database runs: its statements and its migrations, nothing else. The queue's
/// logic (`QueueStore`) is written once over a dialect; `.sqlite` and `.postgres` are the two.
///
/// Every statement takes its values as `$1`, `$2`, ... (`StoreValue`s, bound by the database's
/// own rules; SQLite reads `$n` as the n-th value too). A statement is the same text on both
/// databases unless they need different SQL: the database's clock, PostgreSQL's row locks
/// (`FOR UPDATE SKIP LOCKED`) and type casts, and how a list is read (`json_each` on SQLite,
/// `= ANY` on PostgreSQL). The parameters each takes are listed with it, and are the same on both.
package struct QueueDialect: Sendable {
    /// Adds a row: `$1` url, `$2` method, `$3` headers, `$4` body, `$5` destination kind, `$6`
    /// destination, `$7` range, `$8` existing-file policy, `$9` priority, `$10` state, `$11`
    /// options, `$12` host, `$13` the addition's token; returns `id`.
    let insert: String
    /// Taken before an addition looks for a conflict (PostgreSQL: an advisory lock, so two workers
    /// adding one destination take turns), nil where a write transaction is exclusive already.
    let lockForAdding: String?
    /// After adding a row of host `$1` (PostgreSQL: its row in `host_slots`), nil for none.
    let noteHost: String?
    /// The rows an addition with token `$1` added (run again after a lost COMMIT reply).
    let addedEarlier = "SELECT id FROM downloads WHERE add_token = $1 ORDER BY id"
    /// The unfinished item writing to file `$1`.
    let activeFile =
        "SELECT id FROM downloads WHERE destination_kind = 'file' AND destination = $1 AND state NOT IN ('completed', 'cancelled') LIMIT 1"
    /// The unfinished item fetching URL `$2` into directory `$1`.
    let activeInDirectory = """
        SELECT id FROM downloads WHERE destination_kind = 'directory' AND destination = $1 AND url = $2
            AND state NOT IN ('completed', 'cancelled') LIMIT 1
        """
    /// The newest completed item of kind `$1`, destination `$2` and URL `$3`.
    let completed = """
        SELECT * FROM downloads WHERE destination_kind = $1 AND destination = $2 AND url = $3 AND state = 'completed'
        ORDER BY id DESC LIMIT 1
        """
    /// Item `$1`.
    let load = "SELECT * FROM downloads WHERE id = $1"
    /// Item `$1`, locked until the transaction ends (PostgreSQL: `FOR UPDATE`; SQLite's write
    /// transaction is exclusive).
    let loadLocking: String
    /// Items `$1` (a list), locked until the transaction ends, in id order (so two transactions
    /// locking sets of rows never wait for each other in a cycle).
    let loadManyLocking: String
    /// Every item, oldest first.
    let all = "SELECT * FROM downloads ORDER BY id"
    /// Options `$1` of item `$2`.
    let updateOptions: String
    /// Priority `$1` of item `$2`.
    let setPriority = "UPDATE downloads SET priority = $1 WHERE id = $2"
    /// Points item `$4` at destination kind `$1`, destination `$2` and final path `$3`, with move
    /// intent `$5` (the one recorded, now relocated), only while no transfer runs it.
    let relocate: String
    /// Records move intent `$1` of item `$2`, only while no transfer runs it and no other intent
    /// is left (see `MoveIntent`).
    let recordMoveIntent: String
    /// Clears the move intent of item `$1`, only while it is still `$2`.
    let clearMoveIntent = "UPDATE downloads SET move_intent = NULL WHERE id = $1 AND move_intent = $2"

    /// The row owner `$1` leased with claim token `$2`, if that claim committed.
    let claimedEarlier: String
    /// A page of the best queued items: `$1` the ids to choose among (a list, or NULL for any),
    /// `$2` how many, `$3` how many to skip, `$4` hosts to leave out (a list); returns `id`, `host`. PostgreSQL locks the rows it
    /// returns and passes over rows another worker is claiming (`SKIP LOCKED`).
    let nextQueued: String
    /// The same, each row locked with its host's row (PostgreSQL's `host_slots`), for a claim with
    /// a per-host limit: the claims of one host take turns.
    let nextQueuedLockingHost: String
    /// Leases item `$5` if it is still queued and, with a limit `$6` (NULL for none), its host
    /// `$7` has fewer than `$6` items in a transfer state: `$1` owner, `$2` worker, `$3` seconds,
    /// `$4` claim token; returns the row.
    let lease: String
    /// Leases the items of list `$5` still queued, with no per-host limit (`$1`..`$4` as `lease`);
    /// returns their rows, in no order: one statement for a claim's page.
    let leaseMany: String
    /// Extends the leases owner `$1` holds by `$2` seconds: `$3` ids and `$4` epochs (lists, pairwise);
    /// returns `id`, `state` of each one still its own.
    let renew: String
    /// How many items are queued or in a transfer state, or whose state cannot be read: `n`.
    let pendingCount: String
    /// One item queued or in a transfer state, among `$1` (a list, or NULL for any).
    let pendingAmong: String
    /// The items a recovery looks at: in a transfer state (or unreadable), with `id`, `state`,
    /// `lease_owner` and `expired` (its lease is over by the database's clock). PostgreSQL looks
    /// only at expired ones, locked.
    let recoveryCandidates: String
    /// Item `$2` to state `$1` with no lease (its owner was lost).
    let release: String
    /// Item `$2` failed with message `$1` and no lease (its state cannot be read).
    let failUnreadable: String
    /// Settles item `$6`: state `$1`, error `$2` of category `$3`, the lease released if `$4`,
    /// claimable again after `$5` seconds (NULL: at once); a completion (`$7` not NULL) with its
    /// `$7` bytes at `$8`, its record forgotten, in the same statement.
    let settle: String
    /// Takes the secrets out of item `$4`: URL `$1` (NULL keeps it), options `$2`, record `$3`.
    let scrub = "UPDATE downloads SET headers = '[]', body = NULL, url = COALESCE($1, url), options = $2, record = $3 WHERE id = $4"
    /// Removes item `$1`.
    let delete = "DELETE FROM downloads WHERE id = $1"
    /// Progress of item `$5` under epoch `$6`: `$1` bytes, `$2` total, `$3` speed, `$4` final path
    /// (NULL keeps it).
    let progress: String
    /// The record of item `$1`.
    let loadRecord = "SELECT record FROM downloads WHERE id = $1"
    /// Record `$1` of item `$2`, only under epoch `$3` (NULL: outside any lease).
    let saveRecord: String
    /// Records of several items in one statement: ids `$1`, record texts `$2`, epochs `$3` (lists,
    /// pairwise; an epoch below 0 fences nothing); returns the `id` of each row written.
    let saveRecords: String
    /// The schema, as ordered named migrations.
    let migrator: Migrator

    // `haul serve`'s event journal (`QueueStore+Events`): the same text on both databases.
    /// Appends event `$2` of item `$1` at `$3`; returns `id`, or no row for a second completion of an item.
    let appendEvent = "INSERT INTO serve_events (item_id, method, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING id"
    /// Forgets the events up to id `$1`.
    let trimEvents = "DELETE FROM serve_events WHERE id <= $1"
    /// Events after id `$1`, oldest first, `$2` at most: `id`, `item_id`, `method`.
    let eventsAfter = "SELECT id, item_id, method FROM serve_events WHERE id > $1 ORDER BY id LIMIT $2"
    /// The journal's extent: `oldest`, `newest` ids, `kept` rows, `since` (the oldest's time).
    let eventBounds = "SELECT min(id) AS oldest, max(id) AS newest, count(*) AS kept, min(created_at) AS since FROM serve_events"
    /// When the journal began (its migration's time): `at`.
    let journalStart = "SELECT min(applied_at) AS at FROM schema_migrations WHERE name LIKE '%-serve-events'"
    /// Journals a completion (at `$2`) for each item completed since `$1` without one; returns the new rows' `id`, `item_id`.
    let journalMissedCompletions = """
        INSERT INTO serve_events (item_id, method, created_at)
            SELECT id, 'aria2.onDownloadComplete', CAST($2 AS DOUBLE PRECISION) FROM downloads
            WHERE state = 'completed' AND updated_at >= CAST($1 AS DOUBLE PRECISION)
        ON CONFLICT DO NOTHING RETURNING id, item_id
        """

    /// A dialect whose clock is `now` (seconds since 1970, for `created_at` and `updated_at`) and
    /// whose other statements differ as given.
    init(
        now: String, insertLock: String?, noteHost: String?, loadLocking: String, loadManyLocking: String, claimedEarlier: String,
        nextQueued: String,
        nextQueuedLockingHost: String, lease: String, leaseMany: String, renew: String, pendingAmong: String, recoveryCandidates: String,
        releaseLease: String, settle: String, progressEpoch: String, saveRecord: String, saveRecords: String,
        migrator: Migrator
    ) {
        insert = """
            INSERT INTO downloads (url, method, headers, body, destination_kind, destination, range_spec, existing_policy,
                priority, state, options, host, add_token, created_at, updated_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, \(now), \(now))
            RETURNING id
            """
        lockForAdding = insertLock
        self.noteHost = noteHost
        self.loadLocking = loadLocking
        self.loadManyLocking = loadManyLocking
        updateOptions = "UPDATE downloads SET options = $1, updated_at = \(now) WHERE id = $2"
        // A completed item keeps its time: it is the completion's, which the event journal reads
        // (a moved download's completion, trimmed from the journal, must not look new).
        relocate = """
            UPDATE downloads SET destination_kind = $1, destination = $2, final_path = $3, move_intent = $5,
                updated_at = CASE WHEN state = 'completed' THEN updated_at ELSE \(now) END
            WHERE id = $4 AND state IN (\(Self.atRestStates))
            """
        recordMoveIntent = "UPDATE downloads SET move_intent = $1 WHERE id = $2 AND move_intent IS NULL AND state IN (\(Self.atRestStates))"
        self.claimedEarlier = claimedEarlier
        self.nextQueued = nextQueued
        self.nextQueuedLockingHost = nextQueuedLockingHost
        self.lease = lease
        self.leaseMany = leaseMany
        self.renew = renew
        pendingCount = "SELECT count(*) AS n FROM downloads WHERE state NOT IN (\(Self.restingStates))"
        self.pendingAmong = pendingAmong
        self.recoveryCandidates = recoveryCandidates
        release = "UPDATE downloads SET state = $1, \(releaseLease), updated_at = \(now) WHERE id = $2"
        failUnreadable = """
            UPDATE downloads SET state = 'failed', last_error = $1, error_category = 'io', \(releaseLease), updated_at = \(now)
            WHERE id = $2
            """
        self.settle = settle
        progress = """
            UPDATE downloads SET bytes = $1, total_bytes = $2, speed = $3, final_path = COALESCE($4, final_path), updated_at = \(now)
            WHERE id = $5 AND lease_epoch = \(progressEpoch)
            """
        self.saveRecord = saveRecord
        self.saveRecords = saveRecords
        self.migrator = migrator
    }

    /// The transfer states (running, pausing, cancelling), as an SQL list.
    static let transferStates = DownloadState.allCases.filter(\.hasTransfer).map { "'\($0.rawValue)'" }.joined(separator: ", ")
    /// The states of an item neither queued nor in a transfer, as an SQL list.
    static let restingStates = DownloadState.allCases.filter { !$0.hasTransfer && $0 != .queued }.map { "'\($0.rawValue)'" }
        .joined(separator: ", ")
    /// The states of an item with no transfer (queued included), as an SQL list.
    static let atRestStates = DownloadState.allCases.filter { !$0.hasTransfer }.map { "'\($0.rawValue)'" }.joined(separator: ", ")
}
