import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// One file, one writer, whatever the spelling of its path, through real processes (and a second
/// real user): a run that exits 0 has the whole file under its name.
@Suite("haul: one writer per file, known by identity", .serialized)
struct CLIOneWriterTests {
    static let size = 600 * 1024

    /// `haul ARGUMENTS` run in `directory`, as `user` when given (through runuser).
    static func haulIn(_ directory: String, _ arguments: [String], user: String? = nil, timeout: Double = 60) throws -> ProcessResult {
        let haul = try HaulBinary.path()
        let script = #"cd "$1" && shift && exec "$@""#
        var command = ["-c", script, "sh", directory, haul] + arguments
        if let user { command = ["-u", user, "--", "/bin/sh"] + command }
        return try ProcessRunner.run(user == nil ? "/bin/sh" : "/usr/sbin/runuser", command, timeout: timeout)
    }

    /// Both runs at once; their results in the order given.
    static func together(_ first: @escaping @Sendable () throws -> ProcessResult, _ second: @escaping @Sendable () throws -> ProcessResult) -> [ProcessResult?]
    {
        let results = ResultsBox()
        let group = DispatchGroup()
        for (index, run) in [first, second].enumerated() {
            DispatchQueue.global().async(group: group) { results.set(index, try? run()) }
        }
        group.wait()
        return results.values
    }

    @Test(.timeLimit(.minutes(2)))
    func twoSpellingsOfOnePathGiveOneWriterAndAWholeFile() throws {
        let work = try TemporaryDirectory(prefix: "haul-one-writer")
        let nginx = try ServedFiles.start(in: work, [("big.bin", Self.size, 71)], limitRate: "300k")
        defer { nginx.stop() }
        let dl = work.file("dl")
        try FileManager.default.createDirectory(atPath: dl, withIntermediateDirectories: true)
        let url = nginx.baseURL + "/limited/big.bin"
        let expected = TestData.bytes(count: Self.size, seed: 71)
        for (name, first, second) in [("out.bin", "out.bin", dl + "/out.bin"), ("x.bin", "./x.bin", "x.bin")] {
            // GIVEN two runs at once to one file, its path spelled two ways
            let results = Self.together({ try Self.haulIn(dl, ["-o", first, url]) }, { try Self.haulIn(dl, ["-o", second, url]) })
            let statuses = results.map { $0?.status ?? -1 }.sorted()
            // THEN one downloads and the other is refused (exit 7: the destination is held)
            #expect(statuses == [0, 7], "\(name): \(results.map { ($0?.status ?? -1, $0?.stderr ?? "") })")
            // AND the file under its name is whole
            #expect(Disk.difference(dl + "/" + name, expected) == nil, "\(name)")
        }
    }

    @Test(.timeLimit(.minutes(2)))
    func aQueueRunKeepsItsLockOnAFileReachedThroughASymlinkedDirectory() throws {
        let work = try TemporaryDirectory(prefix: "haul-one-writer-link")
        let nginx = try ServedFiles.start(in: work, [("slow.bin", Self.size, 72), ("fast.bin", 4096, 73)], limitRate: "150k")
        defer { nginx.stop() }
        let real = work.file("real")
        try FileManager.default.createDirectory(atPath: real, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: work.file("link"), withDestinationPath: real)
        let state = work.file("state")
        let slow = nginx.baseURL + "/limited/slow.bin"
        // GIVEN a queue downloading link/b.bin (slowly) and real/a.bin (at once), one directory
        for (path, url) in [(work.file("link/b.bin"), slow), (real + "/a.bin", nginx.baseURL + "/fast.bin")] {
            let added = try HaulBinary.run(["queue", "add", "--state", state, "-o", path, url])
            #expect(added.status == 0, "\(added.stderr)")
        }
        let run = try RunningHaul(["queue", "run", "--state", state, "-j", "2"])
        #expect(Disk.waitUntil(timeout: 20) { Disk.bytes(real + "/a.bin")?.count == 4096 })
        usleep(300_000)
        // WHEN, a.bin done and b.bin still running, another run asks for real/b.bin
        let second = try HaulBinary.run(["-o", real + "/b.bin", slow], timeout: 30)
        // THEN it is refused: b.bin's lock outlived a.bin's
        #expect(second.status == 7, "a second writer ran: exit \(second.status), \(second.stderr)")
        // AND the queue's b.bin is whole
        #expect(try run.wait(timeout: 30) == .exited(0), "\(run.stderr)")
        #expect(Disk.difference(real + "/b.bin", TestData.bytes(count: Self.size, seed: 72)) == nil)
    }

    @Test(.timeLimit(.minutes(2)), .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser")))
    func twoUsersShareADirectoryLikeTmp() throws {
        let work = try TemporaryDirectory(prefix: "haul-one-writer-users")
        chmod(work.file(""), 0o755)
        let nginx = try ServedFiles.start(in: work, [("slow.bin", Self.size, 74), ("small.bin", 8192, 75)], limitRate: "200k")
        defer { nginx.stop() }
        let shared = work.file("shared")
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true)
        chmod(shared, 0o1777)
        let small = nginx.baseURL + "/small.bin"
        // GIVEN root downloading into a directory of mode 1777
        let first = try RunningHaul(["-o", shared + "/a.bin", nginx.baseURL + "/limited/slow.bin"])
        #expect(Disk.waitUntil(timeout: 10) { Disk.exists(shared + "/.haul-lock") })
        // WHEN another user downloads another file there
        let other = try Self.haulIn(shared, ["-o", "b.bin", small], user: "nobody")
        // THEN it works
        #expect(other.status == 0, "\(other.stderr)")
        #expect(Disk.difference(shared + "/b.bin", TestData.bytes(count: 8192, seed: 75)) == nil)
        // AND after root's run is killed (its lock file left behind), still
        first.send(SIGKILL)
        _ = try first.wait(timeout: 10)
        let later = try Self.haulIn(shared, ["-o", "c.bin", small], user: "nobody")
        #expect(later.status == 0, "\(later.stderr)")
        // AND a lock file another user made private (an older haul's) does not lock it out either
        let privateDir = work.file("private-lock")
        try FileManager.default.createDirectory(atPath: privateDir, withIntermediateDirectories: true)
        chmod(privateDir, 0o1777)
        let stale = open(privateDir + "/.haul-lock", O_CREAT | O_WRONLY, 0o600)
        close(stale)
        let stepped = try Self.haulIn(privateDir, ["-o", "d.bin", small], user: "nobody")
        #expect(stepped.status == 0, "\(stepped.stderr)")
    }
}

/// Results set from several threads.
final class ResultsBox: @unchecked Sendable {
    // @unchecked: every access goes through `lock`.
    private let lock = NSLock()
    private var storage: [Int: ProcessResult] = [:]

    func set(_ index: Int, _ result: ProcessResult?) { lock.withLock { storage[index] = result } }
    var values: [ProcessResult?] { lock.withLock { [storage[0], storage[1]] } }
}
