import Foundation
import HaulTestSupport
import Testing

@testable import HaulStore

/// A destination's lock is known by the identity of its directory and its name there, never by
/// how its path was spelled; a lock file in a directory others write to lets them lock too.
@Suite("DestinationLock: identity, not spelling", .serialized)
struct DestinationLockIdentityTests {
    @Test func twoSpellingsOfOneFileShareOneLock() throws {
        let dir = try DestinationLockTests.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createSymbolicLink(atPath: dir + "/link", withDestinationPath: dir)
        try FileManager.default.createDirectory(atPath: dir + "/sub", withIntermediateDirectories: true)
        // GIVEN out.bin locked by one spelling of its path
        let held = try DestinationLock(path: dir + "/.haul-lock", key: dir + "/out.bin.haul-partial")
        defer { held.release() }
        // WHEN it is locked by others: with `./`, with `..`, through a symlinked directory
        for spelled in [dir + "/.", dir + "/sub/..", dir + "/link", dir + "/link/sub/.."] {
            // THEN each is refused as the same destination
            #expect(throws: StoreError.self, "\(spelled)") {
                try DestinationLock(path: spelled + "/.haul-lock", key: spelled + "/out.bin.haul-partial")
            }
        }
    }

    @Test func releasingOneDestinationKeepsAnotherReachedByAnotherSpelling() throws {
        let dir = try DestinationLockTests.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let real = dir + "/real"
        try FileManager.default.createDirectory(atPath: real, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: dir + "/link", withDestinationPath: real)
        // GIVEN b.bin locked through link/ and a.bin through real/ (one directory)
        let b = try DestinationLock(path: dir + "/link/.haul-lock", key: dir + "/link/b.bin.haul-partial")
        defer { b.release() }
        let a = try DestinationLock(path: real + "/.haul-lock", key: real + "/a.bin.haul-partial")
        // WHEN a.bin's is released
        a.release()
        // THEN b.bin's byte is still held, as another process sees it, and the lock file is there
        #expect(FileManager.default.fileExists(atPath: real + "/.haul-lock"))
        let probe = try Self.otherProcessCanLock(real + "/.haul-lock", slot: DestinationLock.slot(forPartial: "b.bin.haul-partial"))
        #expect(probe == "held", "b.bin's lock was dropped with a.bin's: \(probe)")
    }

    @Test func aLockFileIsLockableByWhoeverMayWriteTheDirectory() throws {
        let dir = try DestinationLockTests.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let cases: [(mode: mode_t, expected: mode_t)] = [(0o1777, 0o666), (0o775, 0o660), (0o755, 0o600), (0o700, 0o600)]
        for (index, (mode, expected)) in cases.enumerated() {
            let sub = dir + "/d\(index)"
            try FileManager.default.createDirectory(atPath: sub, withIntermediateDirectories: true)
            chmod(sub, mode)
            // GIVEN a destination locked in a directory of `mode`, under a umask that would take bits away
            let previous = umask(0o077)
            let lock = try DestinationLock(path: sub + "/.haul-lock", key: sub + "/x.haul-partial")
            umask(previous)
            defer { lock.release() }
            // THEN the lock file's mode lets exactly the directory's writers lock in it
            var status = stat()
            #expect(stat(sub + "/.haul-lock", &status) == 0)
            #expect(status.st_mode & 0o777 == expected, "directory \(String(mode, radix: 8)): lock file \(String(status.st_mode & 0o777, radix: 8))")
        }
    }

    /// "held" when another process cannot take a write lock on `slot` of `path`, "free" when it can.
    static func otherProcessCanLock(_ path: String, slot: Int64) throws -> String {
        let script = """
            import fcntl, os, struct, sys
            fd = os.open(sys.argv[1], os.O_RDWR)
            try:
                fcntl.fcntl(fd, fcntl.F_SETLK, struct.pack('hhqqi4x', fcntl.F_WRLCK, 0, int(sys.argv[2]), 1, 0))
                print('free')
            except OSError:
                print('held')
            """
        let result = try ProcessRunner.run("/usr/bin/env", ["python3", "-c", script, path, String(slot)])
        return result.stdoutString.trimmingCharacters(in: .whitespacesAndNewlines) + result.stderr
    }
}
