import Foundation
import HaulTestSupport
import Testing

/// What the user gave a download only so that it could run (every header, the body, a URL's
/// password, the URLs of its resume record) leaves the store's files once the download settles
/// for good: completed or cancelled. A failed download keeps them, for `queue resume`.
@Suite("haul queue: secrets leave the store when a download settles", .serialized)
struct CLIQueueScrubTests {
    @Test(.timeLimit(.minutes(1)))
    func cancellingAnInterruptedDownloadTakesThePasswordOutOfItsRecord() throws {
        // GIVEN a download whose URL carries alice:hunter2@, cut after 1.2 MB, so its row holds a
        // resume record naming that URL
        let server = try FaultServer()
        server.setResource("/i.bin", body: TestData.bytes(count: 2 << 20, seed: 420))
        server.enqueueFaults("/i.bin", [.dropAfter(bytes: 1_200_000)])
        let store = try StoreFixture()
        let out = try TemporaryDirectory(prefix: "haul-cli-out")
        let url = server.url("/i.bin").replacingOccurrences(of: "http://", with: "http://alice:hunter2@")
        #expect(try store.haul(["add", "-x", "1", "-o", out.file("i.bin"), url]).status == 0)
        let run = try store.haul(["run", "-q", "--retry", "0"])
        #expect(run.status == 3, "stderr: \(run.stderr)")
        #expect(!StoreBytes.files(containing: "hunter2", in: store.path).isEmpty, "the failed download keeps its URL to resume")

        // WHEN it is cancelled
        let cancelled = try store.haul(["cancel", "1"])

        // THEN neither the database nor its write-ahead log holds the password
        #expect(cancelled.status == 0, "stderr: \(cancelled.stderr)")
        #expect(StoreBytes.files(containing: "hunter2", in: store.path).isEmpty)
    }

    @Test(.timeLimit(.minutes(1)))
    func everyHeaderTheUserGaveLeavesTheStoreWhenTheDownloadCompletes() throws {
        // GIVEN a download with an API key and a custom header, given with -H
        let server = try FaultServer()
        server.setResource("/k.bin", body: TestData.bytes(count: 30_000, seed: 421))
        let store = try StoreFixture()
        let out = try TemporaryDirectory(prefix: "haul-cli-out")
        let added = try store.haul(["add", "-H", "X-Api-Key: KEY-7f3a9", "-H", "X-Tenant: TENANT-c0ffee", "-o", out.file("k.bin"), server.url("/k.bin")])
        #expect(added.status == 0, "stderr: \(added.stderr)")

        // WHEN it runs to completion
        let run = try store.haul(["run", "-q", "--retry", "0"])

        // THEN the server got both headers, and the store's files hold neither any more
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(server.requests.last?.header("X-Api-Key") == "KEY-7f3a9")
        #expect(server.requests.last?.header("X-Tenant") == "TENANT-c0ffee")
        for secret in ["KEY-7f3a9", "TENANT-c0ffee"] {
            #expect(StoreBytes.files(containing: secret, in: store.path).isEmpty, "\(secret) is still stored")
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aFailedDownloadKeepsItsHeadersForResumeAndLosesThemOnceCompleted() throws {
        // GIVEN a download with an API key that fails half-way
        let server = try FaultServer()
        let body = TestData.bytes(count: 2 << 20, seed: 422)
        server.setResource("/r.bin", body: body)
        server.enqueueFaults("/r.bin", [.dropAfter(bytes: 1_000_000)])
        let store = try StoreFixture()
        let out = try TemporaryDirectory(prefix: "haul-cli-out")
        #expect(try store.haul(["add", "-x", "1", "-H", "X-Api-Key: KEY-5e11", "-o", out.file("r.bin"), server.url("/r.bin")]).status == 0)
        #expect(try store.haul(["run", "-q", "--retry", "0"]).status == 3)

        // WHEN it is resumed and run again
        #expect(try store.haul(["resume", "1"]).status == 0)
        let run = try store.haul(["run", "-q", "--retry", "0"])

        // THEN the resumed request still carries the key, the file is whole, and the key is gone
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let resumed = server.requests.last { $0.header("Range") != nil }
        #expect(resumed?.header("X-Api-Key") == "KEY-5e11", "\(server.requests.map(\.headers))")
        #expect(Disk.difference(out.file("r.bin"), body) == nil)
        #expect(StoreBytes.files(containing: "KEY-5e11", in: store.path).isEmpty)
    }

    @Test(.timeLimit(.minutes(1)))
    func cancellingAQueuedDownloadTakesEveryHeaderAndTheBodyOut() throws {
        // GIVEN a queued download with an API key header and a request body
        let store = try StoreFixture()
        let out = try TemporaryDirectory(prefix: "haul-cli-out")
        let added = try store.haul(["add", "-H", "X-Api-Key: KEY-ab12", "--data", "BODY-9d8e", "-o", out.file("c.bin"), "http://127.0.0.1:1/c"])
        #expect(added.status == 0, "stderr: \(added.stderr)")
        #expect(!StoreBytes.files(containing: "KEY-ab12", in: store.path).isEmpty)

        // WHEN it is cancelled
        #expect(try store.haul(["cancel", "1"]).status == 0)

        // THEN the store's files hold neither
        #expect(StoreBytes.files(containing: "KEY-ab12", in: store.path).isEmpty)
        #expect(StoreBytes.files(containing: "BODY-9d8e", in: store.path).isEmpty)
    }
}

/// The bytes of a store's files, searched as a thief with the disk would.
enum StoreBytes {
    /// Which of haul.sqlite and haul.sqlite-wal in `state` hold `needle` (as UTF-8).
    static func files(containing needle: String, in state: String) -> [String] {
        ["haul.sqlite", "haul.sqlite-wal"].filter { name in
            guard let data = FileManager.default.contents(atPath: state + "/" + name) else { return false }
            return data.range(of: Data(needle.utf8)) != nil
        }
    }
}
