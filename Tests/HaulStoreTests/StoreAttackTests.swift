import Foundation
import HaulCore
import HaulStore
import HaulTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Defects found by attacking the queue store rewritten over one `QueueDialect` (edc86c9): each
/// test fails until its defect is fixed.
@Suite("Store attack", .serialized)
struct StoreAttackTests {
    /// Runs `body` on a thread of its own and waits up to `seconds` for it: whether it returned.
    /// A body that never returns keeps its thread; a caller makes it end (stops its server).
    private static func returns(within seconds: Double, _ body: @escaping @Sendable () -> Void) -> Bool {
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            body()
            done.signal()
        }
        thread.start()
        return done.wait(timeout: .now() + seconds) == .success
    }

    @Test(
        "GIVEN two SQLite items of host \"a\\0b\" (URL http://a%00b/...) and maxPerHost 1, one running WHEN another claim runs THEN it returns nil, never loops forever"
    )
    func sqliteClaimWithNULHostEnds() async {
        // In a child process: the claim loops forever inside the store's write transaction (the
        // full host is left out through json_each, which cuts "a\u0000b" at the NUL, so the same
        // row comes back page after page); SIGALRM ends the child after 20 s.
        await #expect(processExitsWith: .success) {
            alarm(20)
            do {
                try Self.claimTwiceOnNULHost()
            } catch {
                exit(5)
            }
        }
    }

    /// The body of `sqliteClaimWithNULHostEnds`, run in its child process; exits 0 when the
    /// second claim finds nothing.
    private static func claimTwiceOnNULHost() throws {
        do {
            let directory = try TemporaryDirectory(prefix: "haul-attack")
            let store = try QueueStore(directory: directory.path)
            _ = try store.add([
                NewDownload(url: "http://a%00b/1", destinationKind: .file, destination: directory.file("out/1")),
                NewDownload(url: "http://a%00b/2", destinationKind: .file, destination: directory.file("out/2")),
            ])
            let owner = LeaseOwner()
            let rules = ClaimRules(maxPerHost: 1)
            guard try store.claimNext(for: owner, rules: rules) != nil else { exit(3) }
            // The host is at its limit: the second claim must find nothing.
            exit(try store.claimNext(for: owner, rules: rules) == nil ? 0 : 4)
        }
    }

    @Test(
        "GIVEN an SQLite row whose host is not UTF-8 (X'FF', written by another process) and a running row of host U+FFFD, maxPerHost 1 WHEN a claim runs THEN it returns nil, never loops forever"
    )
    func sqliteClaimWithNonUTF8HostEnds() async {
        // The claim reads the host as U+FFFD (String(decoding:) repairs it), counts that host's
        // transfers (1: at its limit), then leaves out "\u{FFFD}", which is not the row's X'FF':
        // the same row comes back forever. Escaping NUL alone would not fix this one.
        await #expect(processExitsWith: .success) {
            alarm(20)
            do {
                try Self.claimOnNonUTF8Host()
            } catch {
                exit(5)
            }
        }
    }

    /// The body of `sqliteClaimWithNonUTF8HostEnds`, run in its child process; exits 0 when the
    /// claim finds nothing.
    private static func claimOnNonUTF8Host() throws {
        let directory = try TemporaryDirectory(prefix: "haul-attack")
        let store = try QueueStore(directory: directory.path)
        let ids = try store.add([
            NewDownload(url: "http://one/1", destinationKind: .file, destination: directory.file("out/1")),
            NewDownload(url: "http://two/2", destinationKind: .file, destination: directory.file("out/2")),
        ])
        let owner = LeaseOwner()
        guard try store.claimNext(for: owner)?.id == ids[0] else { exit(3) }
        let raw = try SQLiteConnection(path: store.location)
        try raw.execute("UPDATE downloads SET host = CAST(X'EFBFBD' AS TEXT) WHERE id = \(ids[0])")
        try raw.execute("UPDATE downloads SET host = CAST(X'FF' AS TEXT) WHERE id = \(ids[1])")
        exit(try store.claimNext(for: owner, rules: ClaimRules(maxPerHost: 1)) == nil ? 0 : 4)
    }

    @Test(
        "GIVEN PostgreSQL items of a host with a quote and a combining mark (http://a%22%CC%81b/) and maxPerHost 1, one running WHEN another claim runs THEN it returns nil, not a malformed array literal"
    )
    func postgresClaimWithQuoteCombiningHost() throws {
        let harness = try StoreHarness(.postgres)
        defer { harness.stop() }
        let store = try harness.open()
        _ = try store.add([
            NewDownload(url: "http://a%22%CC%81b/1", destinationKind: .file, destination: harness.directory.file("out/1")),
            NewDownload(url: "http://a%22%CC%81b/2", destinationKind: .file, destination: harness.directory.file("out/2")),
        ])
        let owner = LeaseOwner()
        let rules = ClaimRules(maxPerHost: 1)
        #expect(try store.claimNext(for: owner, among: nil, settling: [], rules: rules) != nil)

        // PGParameter.quoted escapes `"` Character by Character: `"` + U+0301 is one Character,
        // so the quote goes out unescaped and the server refuses the array.
        do {
            #expect(try store.claimNext(for: owner, among: nil, settling: [], rules: rules) == nil)
        } catch {
            Issue.record("the claim threw: \(error)")
        }
    }

    @Test(
        "GIVEN PostgreSQL items of a host with a backslash and a combining mark (http://a%5C%CC%81b/) and maxPerHost 1, one running WHEN another claim runs THEN it returns nil within seconds"
    )
    func postgresClaimWithBackslashCombiningHostEnds() throws {
        let harness = try StoreHarness(.postgres)
        defer { harness.stop() }
        let store = try QueueStore(postgres: harness.database?.uri ?? "", leaseSeconds: 20, reconnectSeconds: 1)
        _ = try store.add([
            NewDownload(url: "http://a%5C%CC%81b/1", destinationKind: .file, destination: harness.directory.file("out/1")),
            NewDownload(url: "http://a%5C%CC%81b/2", destinationKind: .file, destination: harness.directory.file("out/2")),
        ])
        let expectedHost = "a" + "\\" + "\u{301}b"
        #expect(HostKey.of("http://a%5C%CC%81b/1") == expectedHost)
        let owner = LeaseOwner()
        let rules = ClaimRules(maxPerHost: 1)
        #expect(try store.claimNext(for: owner, among: nil, settling: [], rules: rules) != nil)

        // The backslash (one Character with the mark) goes out unescaped: the server reads it as
        // an escape, the full host is never left out, and the claim leases nothing, forever.
        let result = Mutex<String>("still claiming")
        let ended = Self.returns(within: 15) {
            do {
                let claimed = try store.claimNext(for: owner, among: nil, settling: [], rules: rules)
                result.withLock { $0 = claimed == nil ? "nil" : "claimed \(claimed?.id ?? 0)" }
            } catch {
                result.withLock { $0 = "threw \(error)" }
            }
        }
        #expect(ended, "the claim was still looping after 15 s")
        #expect(result.withLock { $0 } == "nil")
        // Dropping the database (defer) ends a claim still looping: its session is ended, and it fails
        // once reconnecting gives up.
    }

    @Test(
        "GIVEN a download of priority Int.max (or Int.min) WHEN added to each store THEN it is stored and read back as given",
        arguments: StoreKind.allCases)
    func extremePrioritiesRoundTrip(kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()

        // PostgreSQL's priority column is INTEGER (32 bits): Int.max is out of range there.
        var ids: [Int64] = []
        do {
            ids = try store.add([harness.download("max", priority: Int.max), harness.download("min", priority: Int.min)])
        } catch {
            Issue.record("adding threw: \(error)")
        }
        guard ids.count == 2 else { return }
        #expect(try store.item(ids[0])?.priority == Int.max)
        #expect(try store.item(ids[1])?.priority == Int.min)
        #expect(try store.claimNext(for: LeaseOwner(), among: nil, settling: [])?.id == ids[0])
    }

    @Test(
        "GIVEN a URL or a destination with a NUL inside WHEN added to each store THEN it is refused as an invalid value, and nothing is stored cut short",
        arguments: StoreKind.allCases)
    func textWithNULIsRefused(kind: StoreKind) throws {
        let harness = try StoreHarness(kind)
        defer { harness.stop() }
        let store = try harness.open()
        let url = "http://127.0.0.1:1/a" + "\u{0}" + "evil"
        let badURL = NewDownload(url: url, destinationKind: .file, destination: harness.directory.file("out/x"))
        let badPath = NewDownload(url: "http://127.0.0.1:1/a", destinationKind: .file, destination: harness.directory.file("out/x" + "\u{0}" + "a"))

        // PostgreSQL took each text parameter through strdup, which ended it at the NUL: the URL
        // was stored as http://127.0.0.1:1/a (another resource) and the destination as "out/x".
        #expect(storeErrorKind { _ = try store.add([badURL]) } == .invalidValue)
        #expect(storeErrorKind { _ = try store.add([badPath]) } == .invalidValue)
        #expect(try store.all().isEmpty)
    }
}
