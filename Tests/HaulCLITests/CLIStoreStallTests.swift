import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A store that stops answering holds up no transfer: the queue's progress reports reach the
/// store from a thread of their own, never from the event loop every transfer runs on.
@Suite("haul queue: a stalled store stalls no transfer", .serialized)
struct CLIStoreStallTests {
    @Test(.timeLimit(.minutes(2)))
    func transfersGoOnWhileAnotherProcessHoldsTheStoreLocked() throws {
        let work = try TemporaryDirectory(prefix: "haul-store-stall")
        let size = 3 << 20
        let nginx = try ServedFiles.start(in: work, [("a.bin", size, 81), ("b.bin", size, 82)], limitRate: "300k")
        defer { nginx.stop() }
        let state = work.file("state")
        let out = work.file("out")
        let added = try HaulBinary.run(
            ["queue", "add", "--state", state, "-d", out, "-x", "1", nginx.baseURL + "/limited/a.bin", nginx.baseURL + "/limited/b.bin"])
        #expect(added.status == 0, "\(added.stderr)")
        // GIVEN a queue run of two downloads at 300 KB/s each
        let run = try RunningHaul(["queue", "run", "--state", state, "-j", "2"])
        defer { _ = try? run.wait(timeout: 60) }
        func received() -> Int64 {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: out)) ?? []
            return names.filter { $0.hasSuffix(".haul-partial") }.reduce(Int64(0)) { $0 + (Disk.size(out + "/" + $1) ?? 0) }
        }
        #expect(Disk.waitUntil(timeout: 20) { received() > 200_000 })
        // WHEN another process holds the store's write lock for 4 s (longer than its busy timeout)
        let script = """
            import sqlite3, sys, time
            db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
            db.execute('BEGIN IMMEDIATE')
            print('locked', flush=True)
            time.sleep(4)
            db.execute('ROLLBACK')
            """
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        holder.arguments = ["python3", "-c", script, state + "/haul.sqlite"]
        let pipe = Pipe()
        holder.standardOutput = pipe
        try holder.run()
        _ = pipe.fileHandleForReading.availableData
        let before = received()
        usleep(3_500_000)
        let during = received() - before
        holder.waitUntilExit()
        // THEN the transfers went on meanwhile, near their rate (0 when a progress report waited for the lock on the event loop)
        #expect(during > 600_000, "only \(during) bytes arrived in 3.5 s while the store was locked")
        // AND both downloads complete
        #expect(try run.wait(timeout: 60) == .exited(0), "\(run.stderr)")
        for (name, seed) in [("a.bin", UInt64(81)), ("b.bin", UInt64(82))] {
            #expect(Disk.difference(out + "/" + name, TestData.bytes(count: size, seed: seed)) == nil, "\(name)")
        }
    }
}
