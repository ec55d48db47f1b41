import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A fleet on one machine: a private PostgreSQL cluster, an nginx serving the files, and `haul
/// queue run` workers, each with its own HOME and working directory. An audit trigger records
/// every change of every row with the session that made it (each worker connects under its own
/// `application_name`), so a test can check that no worker ever wrote to an item leased to another.
final class FleetFixture {
    let scratch: TemporaryDirectory
    let cluster: PostgresCluster
    let nginx: NginxServer
    let database: String
    /// The files nginx serves, by name.
    private(set) var files: [String: [UInt8]] = [:]
    var output: String { scratch.file("out") }

    init(limitRate: String? = nil) throws {
        scratch = try TemporaryDirectory(prefix: "haul-fleet")
        try FileManager.default.createDirectory(atPath: scratch.file("www"), withIntermediateDirectories: true)
        cluster = try PostgresCluster()
        database = "fleet"
        _ = try cluster.createDatabase(database)
        nginx = try NginxServer(documentRoot: scratch.file("www"), limitRate: limitRate)
    }

    func stop() {
        nginx.stop()
        cluster.stop()
        scratch.remove()
    }

    /// The store's URI as worker `app` connects to it (through `port`, a relay's, when given).
    func uri(_ app: String = "test", port: Int? = nil) -> String {
        let direct = cluster.uri(database: database) + "?application_name=" + app
        guard let port else { return direct }
        return direct.replacingOccurrences(of: "127.0.0.1:\(cluster.port)/", with: "127.0.0.1:\(port)/")
    }

    /// Writes `count` files of random sizes up to `maxSize` into nginx's root: `f0.bin`...
    func makeFiles(_ count: Int, size: ClosedRange<Int>) throws -> [String] {
        var generator = SystemRandomNumberGenerator()
        return try (0..<count).map { index in
            let name = "f\(index).bin"
            let bytes = TestData.bytes(count: Int.random(in: size, using: &generator), seed: UInt64(index + 1))
            try Data(bytes).write(to: URL(fileURLWithPath: scratch.file("www/" + name)))
            files[name] = bytes
            return name
        }
    }

    /// Adds the files to the queue (`haul queue add`, 50 at a time, into `out/`), then installs the audit.
    func add(_ names: [String], path: String = "/") throws {
        for start in stride(from: 0, to: names.count, by: 50) {
            let urls = names[start..<min(start + 50, names.count)].map { nginx.baseURL + path + $0 }
            let result = try HaulBinary.run(["queue", "add", "--state", uri("adder"), "-d", output] + urls)
            try #require(result.status == 0, "queue add: \(result.stderr)")
        }
        try installAudit()
    }

    /// Creates the schema (through `haul queue list`) if needed, and the audit trigger.
    func installAudit() throws {
        let list = try HaulBinary.run(["queue", "list", "--state", uri("adder")])
        try #require(list.status == 0, "queue list: \(list.stderr)")
        try psql(Self.audit)
    }

    @discardableResult
    func psql(_ sql: String) throws -> String {
        try cluster.psql(sql, database: database)
    }

    /// A number `psql` printed.
    func count(_ sql: String) throws -> Int {
        Int(try psql(sql)) ?? -1
    }

    /// Every served file arrived whole and exact.
    func expectFilesExact(sourceLocation: SourceLocation = #_sourceLocation) {
        for (name, bytes) in files {
            let got = FileManager.default.contents(atPath: output + "/" + name).map { [UInt8]($0) }
            #expect(got == bytes, "\(name) differs (\(got?.count ?? -1) of \(bytes.count) bytes)", sourceLocation: sourceLocation)
        }
    }

    /// Writes to a leased item by a session other than the one whose claim holds the lease (the
    /// recovery of an expired lease excepted): each one is a worker that wrote past its lease.
    func foreignWrites() throws -> Int {
        try count(
            """
            SELECT count(*) FROM audit w WHERE w.new_epoch = w.old_epoch AND w.old_owner IS NOT NULL
                AND NOT (w.expired AND w.new_owner IS NULL)
                AND w.app IS DISTINCT FROM (SELECT c.app FROM audit c WHERE c.item = w.item AND c.new_epoch > c.old_epoch
                    AND c.seq < w.seq ORDER BY c.seq DESC LIMIT 1)
            """)
    }

    /// Items that became completed more than once.
    func completedTwice() throws -> Int {
        try count(
            "SELECT count(*) FROM (SELECT item FROM audit WHERE new_state = 'completed' AND old_state <> 'completed' GROUP BY item HAVING count(*) > 1) t")
    }

    static let audit = """
        CREATE TABLE IF NOT EXISTS audit (seq BIGSERIAL PRIMARY KEY, item BIGINT, app TEXT, old_epoch BIGINT, new_epoch BIGINT,
            old_state TEXT, new_state TEXT, expired BOOLEAN, old_owner TEXT, new_owner TEXT, at TIMESTAMPTZ DEFAULT clock_timestamp());
        CREATE OR REPLACE FUNCTION audit_downloads() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO audit (item, app, old_epoch, new_epoch, old_state, new_state, expired, old_owner, new_owner)
            VALUES (NEW.id, current_setting('application_name'), OLD.lease_epoch, NEW.lease_epoch, OLD.state, NEW.state,
                COALESCE(OLD.lease_expires < now(), false), OLD.lease_owner, NEW.lease_owner);
            RETURN NULL;
        END $$;
        DROP TRIGGER IF EXISTS audit_downloads ON downloads;
        CREATE TRIGGER audit_downloads AFTER UPDATE ON downloads FOR EACH ROW EXECUTE FUNCTION audit_downloads();
        """
}

/// One `haul queue run` worker of a fleet: its own HOME and working directory, `--json` events
/// in a file, signalled only by its PID.
final class FleetWorker {
    let name: String
    let process = Process()
    let home: String
    private let exited = DispatchSemaphore(value: 0)

    init(
        _ name: String, fixture: FleetFixture, jobs: Int = 2, leaseSeconds: Double = 20, extra: [String] = [], through port: Int? = nil,
        environment extraEnvironment: [String: String] = [:]
    ) throws {
        self.name = name
        home = fixture.scratch.file("worker-" + name)
        try FileManager.default.createDirectory(atPath: home + "/home", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: home + "/work", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: home + "/stdout", contents: nil)
        _ = FileManager.default.createFile(atPath: home + "/stderr", contents: nil)
        process.executableURL = URL(fileURLWithPath: try HaulBinary.path())
        process.arguments = ["queue", "run", "--state", fixture.uri(name, port: port), "-j", String(jobs), "--json"] + extra
        process.currentDirectoryURL = URL(fileURLWithPath: home + "/work")
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = home + "/home"
        environment.removeValue(forKey: "XDG_DATA_HOME")
        environment["HAUL_LEASE_SECONDS"] = String(leaseSeconds)
        environment.merge(extraEnvironment) { $1 }
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle(forWritingAtPath: home + "/stdout")
        process.standardError = FileHandle(forWritingAtPath: home + "/stderr")
        process.terminationHandler = { [exited] _ in exited.signal() }
        try process.run()
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    var pid: Int32 { process.processIdentifier }

    func send(_ signal: Int32) {
        kill(pid, signal)
    }

    /// The exit status (128 + signal when killed); kills it and throws after `timeout` seconds.
    func wait(timeout: Double = 120) throws -> Int32 {
        if exited.wait(timeout: .now() + timeout) == .timedOut {
            kill(pid, SIGKILL)
            exited.wait()
            throw TestSupportError("worker \(name) did not end within \(timeout) s; stderr: \(stderr)")
        }
        process.waitUntilExit()
        return process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
    }

    var stderr: String { (try? String(contentsOfFile: home + "/stderr", encoding: .utf8)) ?? "" }

    /// The ids of the downloads this worker reported completed.
    var completed: [Int64] {
        let text = (try? String(contentsOfFile: home + "/stdout", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
                object["event"] as? String == "completed"
            else { return nil }
            return (object["id"] as? NSNumber)?.int64Value
        }
    }
}

/// Polls `condition` every 50 ms for at most `seconds`; whether it became true.
func eventually(_ seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        Thread.sleep(forTimeInterval: 0.05)
    }
    return try condition()
}
