import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A store that stops answering holds up no transfer: the queue's progress reports reach the
/// store from a thread of their own, and a record a response must have saved before its body is
/// written is saved on the blocking pool while that one transfer is parked; neither runs on the
/// event loop every transfer shares.
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
        #expect(Disk.waitUntil(timeout: 20) { Disk.partialBytes(in: out) > 200_000 })
        // WHEN another process holds the store's write lock for 4 s (longer than its busy timeout)
        let holder = try StoreLockHolder(store: state + "/haul.sqlite", seconds: 4)
        let before = Disk.partialBytes(in: out)
        usleep(3_500_000)
        let during = Disk.partialBytes(in: out) - before
        holder.waitUntilReleased()
        // THEN the transfers went on meanwhile, near their rate (0 when a progress report waited for the lock on the event loop)
        #expect(during > 600_000, "only \(during) bytes arrived in 3.5 s while the store was locked")
        // AND both downloads complete
        #expect(try run.wait(timeout: 60) == .exited(0), "\(run.stderr)")
        for (name, seed) in [("a.bin", UInt64(81)), ("b.bin", UInt64(82))] {
            #expect(Disk.difference(out + "/" + name, TestData.bytes(count: size, seed: seed)) == nil, "\(name)")
        }
    }

    @Test(.timeLimit(.minutes(2)))
    func aResponseHeadArrivingWhileTheStoreIsLockedParksOnlyItsOwnTransfer() throws {
        let work = try TemporaryDirectory(prefix: "haul-store-stall")
        let server = try FaultServer()
        defer { server.stop() }
        let a = TestData.bytes(count: 3 << 20, seed: 83)
        // Over `recordlessBodyLimit`: its record is saved before its body is written.
        let b = TestData.bytes(count: 2 << 20, seed: 84)
        server.setResource("/a.bin", body: a)
        server.setResource("/b.bin", body: b)
        server.setPersistentFaults("/a.bin", [.throttle(bytesPerSecond: 300_000)])
        // b's head comes 2 s after its request: while the store is locked.
        server.enqueueFaults("/b.bin", [.combined([.delayHeaders(seconds: 2), .throttle(bytesPerSecond: 300_000)])])
        let state = work.file("state")
        let out = work.file("out")
        let added = try HaulBinary.run(["queue", "add", "--state", state, "-d", out, "-x", "1", server.url("/a.bin"), server.url("/b.bin")])
        #expect(added.status == 0, "\(added.stderr)")
        // GIVEN a queue run of a download at 300 KB/s and one whose server is slow to answer
        let run = try RunningHaul(["queue", "run", "--state", state, "-j", "2"])
        defer { _ = try? run.wait(timeout: 60) }
        #expect(Disk.waitUntil(timeout: 20) { Disk.partialBytes(in: out) > 100_000 })
        // WHEN another process holds the store's write lock for 4 s, and b's head arrives meanwhile
        let holder = try StoreLockHolder(store: state + "/haul.sqlite", seconds: 4)
        usleep(2_500_000)
        let before = Disk.partialBytes(in: out)
        usleep(1_000_000)
        let during = Disk.partialBytes(in: out) - before
        holder.waitUntilReleased()
        // THEN a went on at its rate while b's record waited for the store (0 when the save blocked the event loop)
        #expect(during > 150_000, "only \(during) bytes arrived in the second after b's head, while the store was locked")
        // AND both complete, bit-exact
        #expect(try run.wait(timeout: 60) == .exited(0), "\(run.stderr)")
        #expect(Disk.difference(out + "/a.bin", a) == nil)
        #expect(Disk.difference(out + "/b.bin", b) == nil)
    }
}

/// Another process holding an SQLite store's write lock (`BEGIN IMMEDIATE`) for a while.
final class StoreLockHolder {
    private let process = Process()

    /// Returns once the lock is held.
    init(store: String, seconds: Double) throws {
        let script = """
            import sqlite3, sys, time
            db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
            db.execute('BEGIN IMMEDIATE')
            print('locked', flush=True)
            time.sleep(float(sys.argv[2]))
            db.execute('ROLLBACK')
            """
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, store, String(seconds)]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let said = pipe.fileHandleForReading.availableData
        guard String(decoding: said, as: UTF8.self).contains("locked") else {
            throw TestSupportError("the lock holder did not take the lock")
        }
    }

    func waitUntilReleased() {
        process.waitUntilExit()
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// A queue run killed right after it reported a completion does not report it again at the next
/// launch: the completion was settled in the store before it was announced.
@Suite("haul queue: a completion is reported once across a kill", .serialized)
struct CLICompletionOnceTests {
    @Test(.timeLimit(.minutes(2)))
    func aCompletionReportedBeforeAKillIsNotReportedAgain() throws {
        let work = try TemporaryDirectory(prefix: "haul-completion-once")
        let server = try FaultServer()
        defer { server.stop() }
        server.setResource("/quick.bin", body: TestData.bytes(count: 30_000, seed: 511))
        server.setResource("/slow.bin", body: TestData.bytes(count: 900_000, seed: 512))
        server.setPersistentFaults("/slow.bin", [.throttle(bytesPerSecond: 300_000)])
        let state = work.file("state")
        let out = work.file("out")
        let added = try HaulBinary.run(["queue", "add", "--state", state, "-d", out, server.url("/quick.bin"), server.url("/slow.bin")])
        #expect(added.status == 0, "\(added.stderr)")
        // GIVEN a run, one at a time, killed (SIGKILL) once it reported the quick download complete
        let first = try RunningHaul(["queue", "run", "--json", "--state", state, "-j", "1"])
        #expect(Disk.waitUntil(timeout: 20) { Self.completed(first.stdout).count == 1 })
        first.send(SIGKILL)
        _ = try first.wait(timeout: 20)
        let reported = Self.completed(first.stdout)
        // WHEN the run is started again
        let second = try HaulBinary.run(["queue", "run", "--json", "--state", state, "-j", "1"])
        #expect(second.status == 0, "\(second.stderr)")
        // THEN what the first reported is not reported again (it was, the store not yet knowing)
        let again = Self.completed(second.stdoutString)
        #expect(Set(reported).isDisjoint(with: again), "reported before the kill: \(reported); again: \(again)")
        #expect(Set(reported + again).count == 2)
    }

    /// The ids of the `completed` events in `--json` output.
    static func completed(_ stdout: String) -> [Int64] {
        stdout.split(separator: "\n").compactMap { line in
            guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
                object["event"] as? String == "completed"
            else { return nil }
            return (object["id"] as? NSNumber)?.int64Value
        }
    }
}
