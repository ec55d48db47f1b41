import Foundation
import Testing

@testable import HaulStore

/// One writer per destination through one lock file per directory: refused within the process and
/// from another process (named by its PID), free again once released, the file gone with the last
/// holder and kept while another process holds a lock in it.
@Suite("DestinationLock", .serialized)
struct DestinationLockTests {
    static func directory() throws -> String {
        let path = NSTemporaryDirectory() + "haul-lock-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func aSecondHolderInTheProcessIsRefusedAndTheLastReleaseRemovesTheFile() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let lockPath = dir + "/.haul-lock"
        // GIVEN a lock on a.bin
        let first = try DestinationLock(path: lockPath, key: dir + "/.haul-a.haul-partial")
        // WHEN a.bin is locked again THEN refused, naming this process
        #expect(throws: StoreError.self) { try DestinationLock(path: lockPath, key: dir + "/.haul-a.haul-partial") }
        do {
            _ = try DestinationLock(path: lockPath, key: dir + "/.haul-a.haul-partial")
        } catch {
            #expect(error.kind == .heldElsewhere)
            #expect(error.message.contains("process \(getpid())"), "\(error.message)")
        }
        // AND another destination of the directory is free
        let second = try DestinationLock(path: lockPath, key: dir + "/.haul-b.haul-partial")
        #expect(FileManager.default.fileExists(atPath: lockPath))
        // WHEN a.bin is released THEN it can be taken again, and the file stays for b.bin
        first.release()
        first.release()
        let again = try DestinationLock(path: lockPath, key: dir + "/.haul-a.haul-partial")
        again.release()
        #expect(FileManager.default.fileExists(atPath: lockPath))
        // WHEN the last holder releases THEN the lock file is gone
        second.release()
        #expect(!FileManager.default.fileExists(atPath: lockPath))
    }

    @Test func anotherProcessHoldingTheDestinationIsNamedAndItsLockKeepsTheFile() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let lockPath = dir + "/.haul-lock"
        let key = dir + "/.haul-a.haul-partial"
        // GIVEN another process holding a.bin's byte (as a haul process would)
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let script = """
            import fcntl, os, struct, sys, time
            fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.fcntl(fd, fcntl.F_SETLK, struct.pack('hhqqi4x', fcntl.F_WRLCK, 0, int(sys.argv[2]), 1, 0))
            print('locked', flush=True)
            time.sleep(30)
            """
        holder.arguments = ["python3", "-c", script, lockPath, String(DestinationLock.slot(forPartial: key))]
        let output = Pipe()
        holder.standardOutput = output
        try holder.run()
        defer {
            if holder.isRunning {
                kill(holder.processIdentifier, SIGKILL)
                holder.waitUntilExit()
            }
        }
        let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        #expect(line.contains("locked"))
        // WHEN this process locks a.bin THEN it is refused, naming that process
        do {
            _ = try DestinationLock(path: lockPath, key: key)
            Issue.record("the lock was taken while another process held it")
        } catch {
            #expect(error.kind == .heldElsewhere)
            #expect(error.message.contains("process \(holder.processIdentifier)"), "\(error.message)")
        }
        // AND b.bin is free, and releasing it keeps the file the other process holds a lock in
        let other = try DestinationLock(path: lockPath, key: dir + "/.haul-b.haul-partial")
        other.release()
        #expect(FileManager.default.fileExists(atPath: lockPath))
        // WHEN the other process dies THEN a.bin is free (the kernel dropped its lock)
        kill(holder.processIdentifier, SIGKILL)
        holder.waitUntilExit()
        let taken = try DestinationLock(path: lockPath, key: key)
        taken.release()
        #expect(!FileManager.default.fileExists(atPath: lockPath))
    }
}
