import Foundation
import HaulTestSupport
import Testing

/// `--state postgresql://…` on the command line: a database, never a directory, and a shared
/// store that refuses secrets with exit code 12.
@Suite("CLI --state postgresql://", .serialized)
struct CLIFleetStateTests {
    @Test("GIVEN --state postgresql://… with no server WHEN a queue command runs THEN it fails saying so and creates no directory named postgresql:")
    func uriIsNotADirectory() throws {
        let scratch = try TemporaryDirectory(prefix: "haul-fleet-state")
        defer { scratch.remove() }
        for scheme in ["postgresql", "postgres"] {
            let result = try ProcessRunner.run(
                "/bin/sh", ["-c", "cd \"$1\" && exec \"$2\" queue list --state \(scheme)://haul@127.0.0.1:1/none", "sh", scratch.path, try HaulBinary.path()])
            #expect(result.status == 6, "\(scheme): \(result.stderr)")
            #expect(result.stderr.contains("cannot connect to PostgreSQL"), "\(result.stderr)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path) == [])
    }

    @Test(
        "GIVEN a shared store WHEN a download with a header or a password in its URL is added THEN exit 12 and nothing is stored; by reference (--netrc-file) it is added"
    )
    func secretsRefused() throws {
        let cluster = try PostgresCluster()
        defer { cluster.stop() }
        let scratch = try TemporaryDirectory(prefix: "haul-fleet-secrets")
        defer { scratch.remove() }
        let uri = cluster.uri()
        let header = try HaulBinary.run(["queue", "add", "--state", uri, "-H", "Authorization: Bearer s3cret", "http://127.0.0.1:1/a", "-o", scratch.file("a")])
        #expect(header.status == 12)
        #expect(header.stderr.contains("request headers (Authorization)"))
        #expect(!header.stderr.contains("s3cret"))
        let password = try HaulBinary.run(["queue", "add", "--state", uri, "http://alice:hunter2@127.0.0.1:1/b", "-o", scratch.file("b")])
        #expect(password.status == 12)
        #expect(!password.stderr.contains("hunter2"))
        let batch = try HaulBinary.run(["--state", uri, "-H", "X-Api-Key: k3y", "http://127.0.0.1:1/c", "http://127.0.0.1:1/e", "-d", scratch.path])
        #expect(batch.status == 12, "\(batch.stderr)")
        #expect(try cluster.psql("SELECT count(*) FROM downloads") == "0")
        let netrc = scratch.file("netrc")
        try "machine 127.0.0.1 login alice password hunter2\n".write(toFile: netrc, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: netrc)
        let byReference = try HaulBinary.run(["queue", "add", "--state", uri, "--netrc-file", netrc, "http://127.0.0.1:1/d", "-o", scratch.file("d")])
        #expect(byReference.status == 0, "\(byReference.stderr)")
        #expect(try cluster.psql("SELECT count(*) FROM downloads WHERE options LIKE '%netrc%' AND options NOT LIKE '%hunter2%'") == "1")
    }
}

/// `--max-per-host` on a batch (one machine, the SQLite store): the same claim rule.
@Suite("CLI batch --max-per-host")
struct CLIBatchHostLimitTests {
    @Test(
        "GIVEN a batch of three files of one host with -j 3 --max-per-host 1 WHEN it runs THEN nginx serves them one at a time; one URL with the option is a usage error"
    )
    func batchHonoursTheHostLimit() throws {
        let scratch = try TemporaryDirectory(prefix: "haul-batch-host")
        defer { scratch.remove() }
        try FileManager.default.createDirectory(atPath: scratch.file("www"), withIntermediateDirectories: true)
        var files: [String: [UInt8]] = [:]
        for index in 0..<3 {
            let bytes = TestData.bytes(count: 300_000, seed: UInt64(index + 7))
            try Data(bytes).write(to: URL(fileURLWithPath: scratch.file("www/b\(index).bin")))
            files["b\(index).bin"] = bytes
        }
        let nginx = try NginxServer(documentRoot: scratch.file("www"), limitRate: "150k")
        defer { nginx.stop() }
        let urls = files.keys.sorted().map { nginx.baseURL + "/limited/" + $0 }
        let result = try HaulBinary.run(
            ["--state", scratch.file("state"), "-j", "3", "--max-per-host", "1", "-q", "-d", scratch.file("out")] + urls, timeout: 60)
        #expect(result.status == 0, "\(result.stderr)")
        for (name, bytes) in files {
            #expect(FileManager.default.contents(atPath: scratch.file("out/" + name)).map { [UInt8]($0) } == bytes)
        }
        #expect(nginx.requestIntervals().count == 3)
        #expect(nginx.maxConcurrentRequests(matching: "/limited/") == 1)
        let single = try HaulBinary.run(["--max-per-host", "1", urls[0], "-o", scratch.file("single")])
        #expect(single.status == 2)
        #expect(single.stderr.contains("--max-per-host"))
    }
}
