import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `haul queue ...` against a store in a temporary directory: adding, listing, pausing, resuming,
/// cancelling and removing downloads, and `queue run` shared by processes, interrupted and killed.
@Suite("haul queue", .serialized)
struct CLIQueueTests {
    // MARK: managing the queue

    @Test(.timeLimit(.minutes(1)))
    func addListPauseResumeCancelAndRemove() throws {
        // GIVEN a server with three small files and an empty store
        let server = try FaultServer()
        let bodies = (0..<3).map { TestData.bytes(count: 48_000 + $0 * 1_000, seed: 300 + UInt64($0)) }
        for (index, body) in bodies.enumerated() { server.setResource("/q\(index).bin", body: body) }
        let store = try StoreFixture()
        let out = try TemporaryDirectory(prefix: "haul-cli-out")

        // WHEN one URL is added with -o and two with -d
        let addOne = try store.haul(["add", server.url("/q0.bin"), "-o", out.file("first.bin")])
        let addTwo = try store.haul(["add", server.url("/q1.bin"), server.url("/q2.bin"), "-d", out.path])
        // THEN each add succeeds and prints the new ids, one per line
        #expect(addOne.status == 0, "stderr: \(addOne.stderr)")
        #expect(addTwo.status == 0, "stderr: \(addTwo.stderr)")
        let firstIDs = StoreFixture.ids(addOne)
        let moreIDs = StoreFixture.ids(addTwo)
        #expect(firstIDs.count == 1)
        #expect(moreIDs.count == 2)
        let ids = firstIDs + moreIDs
        #expect(Set(ids).count == 3, "ids: \(ids)")
        try #require(ids.count == 3)

        // WHEN the queue is listed as text
        let text = try store.haul(["list"])
        // THEN a header and one row per download, each with its id and state
        #expect(text.status == 0)
        let lines = text.stdoutString.split(separator: "\n")
        #expect(lines.first?.hasPrefix("ID") == true && lines.first?.contains("STATE") == true, "list: \(text.stdoutString)")
        #expect(lines.count == 4, "list: \(text.stdoutString)")
        for id in ids {
            #expect(lines.contains { $0.hasPrefix("\(id) ") && $0.contains("queued") }, "no queued row for \(id): \(text.stdoutString)")
        }

        // WHEN it is listed as JSON
        let listed = try store.items()
        // THEN each object carries id, state, bytes, totalBytes and lastError
        #expect(listed.values.count == 3)
        for object in listed.values {
            for key in ["id", "state", "bytes", "totalBytes", "lastError"] {
                #expect(object[key] != nil, "\(key) missing from \(object)")
            }
        }
        #expect(listed.state(ids[0]) == "queued")
        #expect(listed.int(ids[0], "bytes") == 0)

        // WHEN the second download is paused and the queue runs
        let pause = try store.haul(["pause", String(ids[1])])
        #expect(pause.status == 0, "stderr: \(pause.stderr)")
        #expect(try store.items().state(ids[1]) == "paused")
        let firstRun = try store.haul(["run", "-q", "--retry", "0"])
        // THEN the run completes the others and skips the paused one
        #expect(firstRun.status == 0, "stderr: \(firstRun.stderr)")
        var afterRun = try store.items()
        #expect(afterRun.state(ids[0]) == "completed")
        #expect(afterRun.state(ids[2]) == "completed")
        #expect(afterRun.state(ids[1]) == "paused")
        #expect(Disk.difference(out.file("first.bin"), bodies[0]) == nil)
        #expect(Disk.difference(out.file("q2.bin"), bodies[2]) == nil)
        #expect(!Disk.exists(out.file("q1.bin")))
        #expect(!server.requests.contains { $0.path == "/q1.bin" })
        #expect(afterRun.int(ids[0], "bytes") == bodies[0].count)
        #expect(afterRun.int(ids[0], "totalBytes") == bodies[0].count)

        // WHEN it is resumed and the queue runs again
        let resume = try store.haul(["resume", String(ids[1])])
        #expect(resume.status == 0, "stderr: \(resume.stderr)")
        #expect(try store.items().state(ids[1]) == "queued")
        let secondRun = try store.haul(["run", "-q", "--retry", "0"])
        // THEN it completes, bit-exact
        #expect(secondRun.status == 0, "stderr: \(secondRun.stderr)")
        afterRun = try store.items()
        #expect(afterRun.state(ids[1]) == "completed")
        #expect(Disk.difference(out.file("q1.bin"), bodies[1]) == nil)

        // WHEN a completed download is removed
        let remove = try store.haul(["rm", String(ids[0])])
        // THEN its row is gone and its finished file stays
        #expect(remove.status == 0, "stderr: \(remove.stderr)")
        let remaining = try store.items()
        #expect(remaining.values.count == 2)
        #expect(remaining.state(ids[0]) == nil)
        #expect(Disk.difference(out.file("first.bin"), bodies[0]) == nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func cancelWithDeleteRemovesThePartialOfAPausedDownload() throws {
        // GIVEN a paused download with a partial: a throttled transfer interrupted by SIGINT, then paused
        let server = try FaultServer()
        let body = TestData.bytes(count: 4 << 20, seed: 310)
        server.setResource("/slow.bin", body: body)
        server.setPersistentFaults("/slow.bin", [.throttle(bytesPerSecond: 1 << 20)])
        let store = try StoreFixture()
        let out = try TemporaryDirectory(prefix: "haul-cli-out")
        let output = out.file("slow.bin")
        let partial = output + ".haul-partial"
        let id = try #require(StoreFixture.ids(try store.haul(["add", server.url("/slow.bin"), "-o", output])).first)
        let running = try RunningHaul(["queue", "run", "-q", "--retry", "0", "--state", store.path])
        #expect(Disk.waitUntil(timeout: 10) { (Disk.size(partial) ?? 0) > 200_000 }, "no partial appeared; stderr: \(running.stderr)")
        running.send(SIGINT)
        #expect(try running.wait(timeout: 15) == .exited(130), "stderr: \(running.stderr)")
        let pause = try store.haul(["pause", String(id)])
        #expect(pause.status == 0, "stderr: \(pause.stderr)")
        #expect(try store.items().state(id) == "paused")
        #expect((Disk.size(partial) ?? 0) > 0)

        // WHEN it is cancelled with --delete
        let cancel = try store.haul(["cancel", String(id), "--delete"])

        // THEN it is cancelled, and neither the partial nor a final file is left
        #expect(cancel.status == 0, "stderr: \(cancel.stderr)")
        #expect(try store.items().state(id) == "cancelled")
        #expect(!Disk.exists(partial))
        #expect(!Disk.exists(output))

        // WHEN the cancelled download is removed
        let remove = try store.haul(["rm", String(id)])
        // THEN its row is gone
        #expect(remove.status == 0, "stderr: \(remove.stderr)")
        #expect(try store.items().values.isEmpty)
    }

    @Test(arguments: [["pause", "999"], ["resume", "999"], ["cancel", "999"], ["rm", "999"], ["pause", "abc"], ["pause"]])
    func unknownOrMissingIDIsAUsageError(arguments: [String]) throws {
        // GIVEN a store with one download
        let store = try StoreFixture()
        let out = try TemporaryDirectory(prefix: "haul-cli-out")
        let add = try store.haul(["add", "http://127.0.0.1:1/x.bin", "-o", out.file("x.bin"), "--paused"])
        #expect(add.status == 0, "stderr: \(add.stderr)")
        // WHEN a command names an id that is not there (or none, or not a number)
        let result = try store.haul(arguments)
        // THEN it exits 2 with a message, and the existing download is untouched
        #expect(result.status == 2, "\(arguments): stderr \(result.stderr)")
        #expect(result.stderr.contains("haul:"), "\(arguments): stderr \(result.stderr)")
        let items = try store.items()
        #expect(items.values.count == 1)
        #expect(items.values.first?["state"] as? String == "paused")
    }

    @Test func queueWithoutAnActionIsAUsageError() throws {
        // GIVEN a store WHEN `haul queue` runs with no action
        let store = try StoreFixture()
        let result = try HaulBinary.run(["queue", "--state", store.path])
        // THEN it exits 2 and lists the actions
        #expect(result.status == 2)
        #expect(result.stderr.contains("add") && result.stderr.contains("run"), "stderr: \(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test func addingADestinationAQueuedDownloadUsesIsRefused() throws {
        // GIVEN a queued download writing to one file
        let store = try StoreFixture()
        let out = try TemporaryDirectory(prefix: "haul-cli-out")
        let output = out.file("taken.bin")
        let first = try store.haul(["add", "http://127.0.0.1:1/a.bin", "-o", output])
        #expect(first.status == 0, "stderr: \(first.stderr)")
        let firstID = try #require(StoreFixture.ids(first).first)

        // WHEN another URL is added with the same destination
        let second = try store.haul(["add", "http://127.0.0.1:1/b.bin", "-o", output])

        // THEN it is refused with exit 7, a message naming the file and the download using it, and no new row
        #expect(second.status == 7, "stderr: \(second.stderr)")
        #expect(second.stderr.contains(output), "stderr: \(second.stderr)")
        #expect(second.stderr.contains("already used") && second.stderr.contains("\(firstID)"), "stderr: \(second.stderr)")
        #expect(second.stdout.isEmpty)
        #expect(try store.items().values.count == 1)
    }

    @Test func aStoredFailureNamesTheCommandsFlagsNotTheLibrarysSettings() throws {
        // GIVEN a queued download whose destination holds a file
        let server = try FaultServer()
        server.setResource("/a.bin", body: TestData.bytes(count: 1000, seed: 7))
        let store = try StoreFixture()
        let out = try TemporaryDirectory(prefix: "haul-cli-out")
        let output = out.file("there.bin")
        try Data("old".utf8).write(to: URL(fileURLWithPath: output))
        let added = try store.haul(["add", server.url("/a.bin"), "-o", output])
        let id = try #require(StoreFixture.ids(added).first, "stderr: \(added.stderr)")

        // WHEN the queue runs it
        let run = try store.haul(["run", "-q"])

        // THEN the failure the store keeps (queue list) speaks as the command does
        #expect(run.status == 7, "stderr: \(run.stderr)")
        #expect(run.stderr.contains("use --force to replace it or -c to continue it"), "stderr: \(run.stderr)")
        let listed = try #require(try store.items().item(id))
        let message = try #require(listed["lastError"] as? String, "\(listed)")
        #expect(message.hasSuffix("already exists; use --force to replace it or -c to continue it"), "\(message)")
        #expect(!message.contains("existingFile"), "\(message)")
    }

    // MARK: running the queue

    @Test(.timeLimit(.minutes(1)))
    func sigintRequeuesTheItemAndTheNextRunResumesItWithARange() throws {
        // GIVEN a queued 4 MiB download served at 1 MiB/s
        let server = try FaultServer()
        let body = TestData.bytes(count: 4 << 20, seed: 320)
        server.setResource("/int.bin", body: body)
        server.setPersistentFaults("/int.bin", [.throttle(bytesPerSecond: 1 << 20)])
        let store = try StoreFixture()
        let out = try TemporaryDirectory(prefix: "haul-cli-out")
        let output = out.file("int.bin")
        let id = try #require(StoreFixture.ids(try store.haul(["add", server.url("/int.bin"), "-o", output])).first)

        // WHEN `queue run` gets SIGINT in the middle of the transfer
        let running = try RunningHaul(["queue", "run", "--retry", "0", "--state", store.path])
        #expect(Disk.waitUntil(timeout: 10) { (Disk.size(output + ".haul-partial") ?? 0) > 300_000 }, "stderr: \(running.stderr)")
        running.send(SIGINT)

        // THEN it exits 130, the item is queued again and the partial stays
        #expect(try running.wait(timeout: 15) == .exited(130), "stderr: \(running.stderr)")
        let interrupted = try store.items()
        #expect(interrupted.state(id) == "queued", "items: \(interrupted.values)")
        let kept = Disk.size(output + ".haul-partial") ?? 0
        #expect(kept > 0 && kept < Int64(body.count))
        #expect(!Disk.exists(output))

        // WHEN the next `queue run` starts (at full speed)
        server.setPersistentFaults("/int.bin", [])
        let next = try store.haul(["run", "-q", "--retry", "0"])

        // THEN it completes the file bit-exact, continuing with a Range request from where it stopped
        #expect(next.status == 0, "stderr: \(next.stderr)")
        #expect(Disk.difference(output, body) == nil)
        #expect(try store.items().state(id) == "completed")
        let ranges = server.requests.filter { $0.path == "/int.bin" }.map { $0.header("Range") }
        #expect(ranges.count == 2, "ranges: \(ranges)")
        #expect(ranges.first == .some(nil))
        #expect(ranges.last == "bytes=\(kept)-", "ranges: \(ranges), partial was \(kept)")
    }

    @Test(.timeLimit(.minutes(2)))
    func twoRunsOnOneStoreShareTheWorkWithoutFetchingAnythingTwice() throws {
        // GIVEN 20 queued downloads of 1 MiB each from nginx at 1 MiB/s per connection
        let root = try TemporaryDirectory(prefix: "haul-cli-nginx")
        let count = 20
        let sizes = (0..<count).map { (1 << 20) + $0 * 4_099 }
        for index in 0..<count {
            try TestData.writeFile(at: root.file("s\(index).bin"), size: sizes[index], seed: 400 + UInt64(index))
        }
        let nginx = try NginxServer(documentRoot: root.path, limitRate: "1m")
        let store = try StoreFixture()
        let out = try TemporaryDirectory(prefix: "haul-cli-out")
        let urls = (0..<count).map { nginx.baseURL + "/limited/s\($0).bin" }
        let add = try store.haul(["add"] + urls + ["-d", out.path])
        #expect(add.status == 0, "stderr: \(add.stderr)")
        #expect(StoreFixture.ids(add).count == count)

        // WHEN two `queue run` processes start at the same time on the same store
        let first = try RunningHaul(["queue", "run", "-j", "4", "-q", "--retry", "0", "--state", store.path])
        let second = try RunningHaul(["queue", "run", "-j", "4", "-q", "--retry", "0", "--state", store.path])
        let firstEnding = try first.wait(timeout: 60)
        let secondEnding = try second.wait(timeout: 60)

        // THEN both succeed and every download is complete and bit-exact
        #expect(firstEnding == .exited(0), "stderr: \(first.stderr)")
        #expect(secondEnding == .exited(0), "stderr: \(second.stderr)")
        let items = try store.items()
        #expect(items.values.count == count)
        #expect(items.values.allSatisfy { $0["state"] as? String == "completed" }, "items: \(items.values)")
        for index in 0..<count {
            let expected = TestData.bytes(count: sizes[index], seed: 400 + UInt64(index))
            #expect(Disk.difference(out.file("s\(index).bin"), expected) == nil, "s\(index).bin")
        }

        // AND nginx served each file exactly once from byte 0
        _ = Disk.waitUntil(timeout: 5) { nginx.accessLog().count >= count }
        let log = nginx.accessLog()
        for url in urls {
            let uri = String(url.dropFirst(nginx.baseURL.count))
            let fromStart = log.filter { $0.uri == uri && $0.range == nil }
            #expect(fromStart.count == 1, "\(uri) was fetched from byte 0 \(fromStart.count) times")
        }
        let sent = log.reduce(0) { $0 + $1.bodyBytesSent }
        #expect(sent == sizes.reduce(0, +), "nginx sent \(sent) bytes for \(sizes.reduce(0, +))")
    }

    // MARK: a damaged store

    @Test func corruptedStoreIsReportedAndLeftUntouched() throws {
        // GIVEN a state directory whose haul.sqlite holds random bytes
        let store = try StoreFixture()
        let database = store.file("haul.sqlite")
        let garbage = TestData.bytes(count: 16_384, seed: 330)
        try Disk.write(garbage, to: database)

        // WHEN the queue is listed (and, separately, a batch is started on it)
        let list = try store.haul(["list"])
        let batch = try HaulBinary.run(["-q", "--state", store.path, "-d", store.file("out"), "http://127.0.0.1:1/a", "http://127.0.0.1:1/b"])

        // THEN both exit 6 with a message naming the file and saying what to do, and the file is unchanged
        #expect(list.status == 6, "stderr: \(list.stderr)")
        #expect(list.stderr.contains(database), "stderr: \(list.stderr)")
        #expect(list.stderr.contains("not a usable") || list.stderr.contains("damaged"), "stderr: \(list.stderr)")
        #expect(list.stdout.isEmpty)
        #expect(batch.status == 6, "stderr: \(batch.stderr)")
        #expect(Disk.bytes(database) == garbage)
    }
}

// MARK: - helpers

/// A queue store in a fresh temporary directory, and `haul queue` commands run against it.
struct StoreFixture {
    /// The state directory passed as `--state`.
    let path: String
    /// Keeps a directory this fixture made alive (and removes it afterwards).
    private let owned: TemporaryDirectory?

    /// A store in a fresh temporary directory.
    init() throws {
        let directory = try TemporaryDirectory(prefix: "haul-cli-state")
        owned = directory
        path = directory.path
    }

    /// The store in `directory`, which the caller owns.
    init(directory: String) {
        owned = nil
        path = directory
    }

    func file(_ name: String) -> String { path + "/" + name }

    /// Runs `haul queue ARGUMENTS --state DIR`.
    func haul(_ arguments: [String], timeout: Double = 60) throws -> ProcessResult {
        try HaulBinary.run(["queue"] + arguments + ["--state", path], timeout: timeout)
    }

    /// `haul queue list --json`, parsed.
    func items(sourceLocation: SourceLocation = #_sourceLocation) throws -> QueueListing {
        let result = try haul(["list", "--json"])
        #expect(result.status == 0, "queue list --json: \(result.stderr)", sourceLocation: sourceLocation)
        return QueueListing(values: JSONLines.parse(result.stdoutString, sourceLocation: sourceLocation))
    }

    /// The ids `queue add` printed, one per line.
    static func ids(_ result: ProcessResult) -> [Int64] {
        result.stdoutString.split(separator: "\n").compactMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
    }
}

/// The objects `haul queue list --json` printed.
struct QueueListing {
    let values: [[String: Any]]

    func item(_ id: Int64) -> [String: Any]? {
        values.first { ($0["id"] as? NSNumber)?.int64Value == id }
    }

    func state(_ id: Int64) -> String? {
        item(id)?["state"] as? String
    }

    func int(_ id: Int64, _ key: String) -> Int? {
        (item(id)?[key] as? NSNumber)?.intValue
    }

    func count(state: String) -> Int {
        values.filter { $0["state"] as? String == state }.count
    }
}
