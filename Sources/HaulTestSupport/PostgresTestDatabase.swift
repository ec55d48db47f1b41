import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A fresh, empty database of one test's own, in the cluster the whole test process shares
/// (``PostgresCluster/shared()``), dropped by ``drop()``.
///
/// Starting a cluster (`initdb`, `pg_ctl start`) takes a second or two; creating a database in
/// a running one takes a tenth of that. A test that only talks SQL to its store can therefore
/// share the server: a database is a whole world of its own for it — tables, advisory locks and
/// `LISTEN`/`NOTIFY` channels are all per database. A test that stops, kills, pauses or
/// reconfigures the server starts a private ``PostgresCluster`` instead.
package final class PostgresTestDatabase: Sendable {
    /// The shared cluster. Never stopped by a test: other tests' databases live there too.
    private let cluster: PostgresCluster
    /// `t_` and 32 hex digits: unique in the cluster, and a valid name without quoting.
    package let name: String
    private let dropped = Mutex(false)

    /// Creates the database, starting the shared cluster first when this is the process's first.
    package init() throws {
        cluster = try PostgresCluster.shared()
        name = "t_" + UUID().uuidString.lowercased().filter { $0 != "-" }
        _ = try cluster.createDatabase(name)
    }

    deinit {
        drop()
    }

    /// `postgresql://haul@127.0.0.1:PORT/NAME`.
    package var uri: String { cluster.uri(database: name) }

    /// The loopback port of the shared server (for a relay in front of it).
    package var port: Int { cluster.port }

    /// Runs SQL through `psql` on this database and returns what it printed (unaligned, tuples only).
    @discardableResult
    package func psql(_ sql: String) throws -> String {
        try cluster.psql(sql, database: name)
    }

    /// Drops the database, ending every session still connected to it (a store the test did not
    /// close, a claim still retrying). Safe to call more than once.
    package func drop() {
        let first = dropped.withLock { dropped in
            defer { dropped = true }
            return !dropped
        }
        guard first else { return }
        // A database left behind only costs disk until the shared cluster is removed at exit.
        _ = try? cluster.psql("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
    }
}

extension PostgresCluster {
    /// The cluster of this test process, once started.
    private static let sharedCluster = Mutex<PostgresCluster?>(nil)

    /// The one cluster this test process shares between its tests, started on first use (callers
    /// at the same moment wait for that one start) and started again should its server have gone.
    ///
    /// Its server and directory go when the process exits (``ServersLeftAtExit``), so no test
    /// run leaves it behind. Tests reach it through ``PostgresTestDatabase``, one database each.
    package static func shared() throws -> PostgresCluster {
        try sharedCluster.withLock { shared in
            if let running = shared, let pid = running.serverPID, kill(pid, 0) == 0 { return running }
            shared?.stop()
            shared = nil
            let started = try PostgresCluster()
            started.removeAtExit()
            shared = started
            return started
        }
    }

    /// When the process exits with the server still running, the exit hook stops it and removes
    /// the directory too: `start` notes only the server, which leaves a cluster that is never
    /// released (the shared one) with its data directory in /tmp.
    package func removeAtExit() {
        guard let pid = serverPID else { return }
        ServersLeftAtExit.note(pid) { [self] in stop() }
    }
}
