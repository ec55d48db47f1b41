import Foundation
import HaulTestSupport
import Testing

/// `haul queue` attacked through the store rewritten over one `QueueDialect` (edc86c9).
@Suite("CLI store attack", .serialized)
struct CLIStoreAttackTests {
    @Test(
        "GIVEN two queued URLs of host \"a\\0b\" (http://a%00b/...) WHEN haul queue run --max-per-host 1 runs THEN it ends by itself (each fails), never spins forever"
    )
    func queueRunWithNULHostEnds() throws {
        let store = try StoreFixture()
        let out = try TemporaryDirectory(prefix: "haul-cli-out")
        let add = try store.haul(["add", "http://a%00b/1", "http://a%00b/2", "-d", out.path])
        #expect(add.status == 0, "stderr: \(add.stderr)")

        // The second worker's claim loops forever in the store's write transaction (the full host
        // is left out through json_each, which cuts "a\u0000b" at the NUL); SIGTERM does not end
        // it either. HaulBinary kills it with SIGKILL after 30 s and throws.
        do {
            let run = try store.haul(["run", "--max-per-host", "1"], timeout: 30)
            #expect(run.status != 0, "the downloads of an unresolvable host cannot succeed")
        } catch {
            Issue.record("haul queue run did not end: \(error)")
        }
    }
}
