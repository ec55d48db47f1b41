import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A download into a directory (`-d`) run again after it completed: its own finished file is
/// recognised (by the name its URL gives before any request, by the server's name after the
/// response head); anything at the name that Haul cannot prove its own is refused as before.
@Suite("haul -d run again after completion")
struct CLIRunAgainDirectoryTests {
    private static let named = "attachment; filename=\"named.bin\""

    @Test func aServerNamedRunAgainIsAlreadyCompleteAfterOneHeadAndLeavesNoPartial() throws {
        // GIVEN a file haul downloaded with -d, named by the server
        let server = try FaultServer()
        let body = TestData.bytes(count: 300_000, seed: 3601)
        server.setResource("/get", body: body)
        server.setPersistentFaults("/get", [.contentDisposition(Self.named)])
        let directory = try TemporaryDirectory()
        #expect(try HaulBinary.run(["-q", "-d", directory.path, server.url("/get?id=1")]).status == 0)
        let requestsBefore = server.requests.count
        // WHEN the same command runs again with --json
        let again = try HaulBinary.run(["--json", "-d", directory.path, server.url("/get?id=1")])
        // THEN one request is made (the name comes with its answer), the completion says already
        // complete with the file's size, and nothing but the file is left in the directory
        #expect(again.status == 0, "stderr: \(again.stderr)")
        #expect(server.requests.count == requestsBefore + 1)
        let objects = JSONLines.parse(String(decoding: again.stdout, as: UTF8.self))
        let completed = objects.first { $0["event"] as? String == "completed" }
        #expect(completed?["alreadyComplete"] as? Bool == true, "\(objects)")
        #expect(completed.flatMap { ($0["bytes"] as? NSNumber)?.int64Value } == Int64(body.count), "\(objects)")
        #expect(completed?["path"] as? String == directory.file("named.bin"), "\(objects)")
        #expect(Disk.difference(directory.file("named.bin"), body) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["named.bin"])
        // AND on a terminal it says so
        let human = try HaulBinary.run(["-d", directory.path, server.url("/get?id=1")])
        #expect(human.status == 0 && human.stderr.contains("already complete"), "stderr: \(human.stderr)")
    }

    @Test func anotherRequestsFileAtTheServersNameIsRefused() throws {
        // GIVEN a file haul downloaded with -d for one request, named by the server
        let server = try FaultServer()
        let body = TestData.bytes(count: 20_000, seed: 3602)
        server.setResource("/get", body: body)
        server.setPersistentFaults("/get", [.contentDisposition(Self.named)])
        let directory = try TemporaryDirectory()
        #expect(try HaulBinary.run(["-q", "-d", directory.path, server.url("/get?id=1")]).status == 0)
        // WHEN another request (another query) the server names alike goes to the same directory
        let other = try HaulBinary.run(["-d", directory.path, server.url("/get?id=2")])
        // THEN the first request's file proves nothing for it: refused as a file in the way
        #expect(other.status == 7, "stderr: \(other.stderr)")
        #expect(!other.stderr.contains("already complete"), "stderr: \(other.stderr)")
        #expect(Disk.difference(directory.file("named.bin"), body) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["named.bin"])
    }

    @Test func anotherURLsFileAtTheURLsNameIsRefused() throws {
        // GIVEN a file haul downloaded with -d from one URL
        let server = try FaultServer()
        let body = TestData.bytes(count: 20_000, seed: 3603)
        server.setResource("/a/same.bin", body: body)
        server.setResource("/b/same.bin", body: TestData.bytes(count: 20_000, seed: 3604))
        let directory = try TemporaryDirectory()
        #expect(try HaulBinary.run(["-q", "-d", directory.path, server.url("/a/same.bin")]).status == 0)
        // WHEN another URL whose last segment is the same name goes to the same directory
        let other = try HaulBinary.run(["-d", directory.path, server.url("/b/same.bin")])
        // THEN it is refused as a file in the way, the first file untouched
        #expect(other.status == 7, "stderr: \(other.stderr)")
        #expect(!other.stderr.contains("already complete"), "stderr: \(other.stderr)")
        #expect(Disk.difference(directory.file("same.bin"), body) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["same.bin"])
    }

    @Test(arguments: [false, true])
    func aSymlinkToTheFinishedFileIsNeverTakenForIt(serverNamed: Bool) throws {
        // GIVEN a file haul downloaded with -d, moved elsewhere, and a symlink to it left at its name
        let server = try FaultServer()
        let body = TestData.bytes(count: 20_000, seed: 3605)
        server.setResource("/link.bin", body: body)
        if serverNamed { server.setPersistentFaults("/link.bin", [.contentDisposition(Self.named)]) }
        let directory = try TemporaryDirectory()
        let out = directory.file("out")
        #expect(try HaulBinary.run(["-q", "-d", out, server.url("/link.bin")]).status == 0)
        let name = serverNamed ? "named.bin" : "link.bin"
        let moved = directory.file("moved.bin")
        #expect(rename(out + "/" + name, moved) == 0)
        #expect(symlink(moved, out + "/" + name) == 0)
        // WHEN the same command runs again
        let again = try HaulBinary.run(["-d", out, server.url("/link.bin")])
        // THEN it is refused (never through a symlink), and the file behind it is untouched
        #expect(again.status != 0, "stderr: \(again.stderr)")
        #expect(!again.stderr.contains("already complete"), "stderr: \(again.stderr)")
        #expect(Disk.difference(moved, body) == nil)
    }

    @Test(arguments: [false, true])
    func aFileRewrittenAtTheNameIsRefused(serverNamed: Bool) throws {
        // GIVEN a file haul downloaded with -d, then rewritten in place (same inode, size and modification time)
        let server = try FaultServer()
        let body = TestData.bytes(count: 20_000, seed: 3606)
        server.setResource("/edit.bin", body: body)
        if serverNamed { server.setPersistentFaults("/edit.bin", [.contentDisposition(Self.named)]) }
        let directory = try TemporaryDirectory()
        #expect(try HaulBinary.run(["-q", "-d", directory.path, server.url("/edit.bin")]).status == 0)
        let path = directory.file(serverNamed ? "named.bin" : "edit.bin")
        // (later than the allowance the mark's bound leaves for setting it, and than a coarse
        // change-time tick: a change within it is the one a mark cannot see, see FinishedMark)
        Thread.sleep(forTimeInterval: 0.02)
        var before = stat()
        #expect(stat(path, &before) == 0)
        let other = TestData.bytes(count: body.count, seed: 3607)
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.write(contentsOf: Data(other))
        try handle.close()
        // (its modification time put back, as `touch -r` or `rsync --inplace -t` do)
        var times = [before.st_atim, before.st_mtim]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        // WHEN the same command runs again
        let again = try HaulBinary.run(["-d", directory.path, server.url("/edit.bin")])
        // THEN the rewritten file is not taken for the finished download: refused, left as it is
        #expect(again.status == 7, "stderr: \(again.stderr)")
        #expect(!again.stderr.contains("already complete"), "stderr: \(again.stderr)")
        #expect(Disk.difference(path, other) == nil)
    }

    @Test func anotherSpellingOfTheDirectoryOrAnExplicitPathIsTheSameDownload() throws {
        // GIVEN a file haul downloaded with -d out
        let server = try FaultServer()
        let body = TestData.bytes(count: 20_000, seed: 3608)
        server.setResource("/spell.bin", body: body)
        let directory = try TemporaryDirectory()
        let out = directory.file("out")
        #expect(try HaulBinary.run(["-q", "-d", out, server.url("/spell.bin")]).status == 0)
        let requestsBefore = server.requests.count
        // WHEN the same request runs with -d out/./, with -d out/ and with -o out/spell.bin
        for arguments in [["-d", out + "/./"], ["-d", out + "/"], ["-o", out + "/spell.bin"]] {
            let again = try HaulBinary.run(arguments + [server.url("/spell.bin")])
            // THEN each is already complete, with no request
            #expect(again.status == 0 && again.stderr.contains("already complete"), "\(arguments): \(again.stderr)")
        }
        #expect(server.requests.count == requestsBefore)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out) == ["spell.bin"])
    }

    @Test func aWrongChecksumOnAServerNamedFinishedFileLeavesItAndNothingElse() throws {
        // GIVEN a file haul downloaded with -d, named by the server
        let server = try FaultServer()
        let body = TestData.bytes(count: 20_000, seed: 3609)
        server.setResource("/sum", body: body)
        server.setPersistentFaults("/sum", [.contentDisposition(Self.named)])
        let directory = try TemporaryDirectory()
        #expect(try HaulBinary.run(["-q", "-d", directory.path, server.url("/sum")]).status == 0)
        // WHEN the same request runs again with a checksum the file does not have
        let wrong = String(repeating: "0", count: 64)
        let again = try HaulBinary.run(["-d", directory.path, "--checksum", "sha256=\(wrong)", server.url("/sum")])
        // THEN it fails as a checksum mismatch, the file is untouched, and nothing is left beside it
        #expect(again.status != 0, "stderr: \(again.stderr)")
        #expect(again.stderr.contains("mismatch"), "stderr: \(again.stderr)")
        #expect(Disk.difference(directory.file("named.bin"), body) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["named.bin"])
        // AND with the right checksum it is already complete
        let right = try HaulBinary.run([
            "-d", directory.path, "--checksum", "sha256=\(try TestData.sha256(ofFile: directory.file("named.bin")))", server.url("/sum"),
        ])
        #expect(right.status == 0 && right.stderr.contains("already complete"), "stderr: \(right.stderr)")
    }

    @Test func forceDownloadsAServerNamedFileAnew() throws {
        // GIVEN a file haul downloaded with -d, named by the server, and the server's file changed
        let server = try FaultServer()
        server.setResource("/v", body: TestData.bytes(count: 20_000, seed: 3610))
        server.setPersistentFaults("/v", [.contentDisposition(Self.named)])
        let directory = try TemporaryDirectory()
        #expect(try HaulBinary.run(["-q", "-d", directory.path, server.url("/v")]).status == 0)
        let new = TestData.bytes(count: 30_000, seed: 3611)
        server.setResource("/v", body: new)
        // WHEN it runs again with --force
        let again = try HaulBinary.run(["--force", "-d", directory.path, server.url("/v")])
        // THEN the new file replaces the old one (force asks for a new download even of a proven file)
        #expect(again.status == 0, "stderr: \(again.stderr)")
        #expect(!again.stderr.contains("already complete"), "stderr: \(again.stderr)")
        #expect(Disk.difference(directory.file("named.bin"), new) == nil)
    }
}

extension CLIRunAgainDirectoryTests {
    @Test func aBatchOfTwoURLsNamedAlikeRunAgainWithAnotherQueueIsAlreadyComplete() throws {
        // GIVEN a batch of two URLs whose names collide (the second saved as "x (1).bin"), one at a time
        let server = try FaultServer()
        let first = TestData.bytes(count: 20_000, seed: 3612)
        let second = TestData.bytes(count: 20_000, seed: 3613)
        server.setResource("/a/x.bin", body: first)
        server.setResource("/b/x.bin", body: second)
        let directory = try TemporaryDirectory()
        let list = directory.file("list.txt")
        try "\(server.url("/a/x.bin"))\n\(server.url("/b/x.bin"))\n".write(toFile: list, atomically: true, encoding: .utf8)
        let out = directory.file("out")
        let run = try HaulBinary.run(["-q", "-j", "1", "--state", directory.file("s1"), "-i", list, "-d", out])
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).sorted() == ["x (1).bin", "x.bin"])
        let requestsBefore = server.requests.count
        // WHEN the same batch runs again with a queue that does not know it (another --state)
        let again = try HaulBinary.run(["--json", "-j", "1", "--state", directory.file("s2"), "-i", list, "-d", out])
        // THEN both files are recognised as already complete, and no third file appears
        #expect(again.status == 0, "stderr: \(again.stderr)")
        let summary = JSONLines.parse(String(decoding: again.stdout, as: UTF8.self)).last { $0["event"] as? String == "summary" }
        #expect(summary.flatMap { ($0["alreadyComplete"] as? NSNumber)?.intValue } == 2, "\(String(describing: summary))")
        #expect(server.requests.count <= requestsBefore + 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).sorted() == ["x (1).bin", "x.bin"])
        #expect(Disk.difference(out + "/x.bin", first) == nil)
        #expect(Disk.difference(out + "/x (1).bin", second) == nil)
    }
}

extension CLIRunAgainDirectoryTests {
    @Test func aServerNamedQueueItemAddedAgainIsAlreadyCompleteAndSummarisedSo() throws {
        // GIVEN a queue item (-d, named by the server) haul downloaded, then removed from the queue
        let server = try FaultServer()
        let body = TestData.bytes(count: 30_000, seed: 3614)
        server.setResource("/q", body: body)
        server.setPersistentFaults("/q", [.contentDisposition(Self.named)])
        let work = try TemporaryDirectory()
        let state = work.file("state")
        let out = work.file("out")
        #expect(try HaulBinary.run(["queue", "add", "--state", state, "-d", out, server.url("/q")]).status == 0)
        #expect(try HaulBinary.run(["queue", "run", "--state", state, "-q"]).status == 0)
        #expect(try HaulBinary.run(["queue", "rm", "--state", state, "1"]).status == 0)
        // WHEN the same download is added again and the queue runs
        #expect(try HaulBinary.run(["queue", "add", "--state", state, "-d", out, server.url("/q")]).status == 0)
        let again = try HaulBinary.run(["queue", "run", "--state", state, "--json"])
        // THEN it completes as already complete, and the summary counts it so, not as fetched
        #expect(again.status == 0, "stderr: \(again.stderr)")
        let objects = JSONLines.parse(String(decoding: again.stdout, as: UTF8.self))
        let completed = objects.first { $0["event"] as? String == "completed" }
        #expect(completed?["alreadyComplete"] as? Bool == true, "\(objects)")
        let summary = objects.last { $0["event"] as? String == "summary" }
        #expect(summary.flatMap { ($0["alreadyComplete"] as? NSNumber)?.intValue } == 1, "\(objects)")
        #expect(summary.flatMap { ($0["completed"] as? NSNumber)?.intValue } == 0, "\(objects)")
        #expect(Disk.difference(out + "/named.bin", body) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).filter { !$0.hasPrefix(".") } == ["named.bin"])
    }
}

extension CLIRunAgainDirectoryTests {
    @Test func aFinishedFileNamedLikeAnotherDownloadsPartialIsNeverClearedByIt() throws {
        // GIVEN a file haul downloaded with -d whose URL names it "x.haul-partial"
        let server = try FaultServer()
        let body = TestData.bytes(count: 20_000, seed: 3615)
        server.setResource("/x.haul-partial", body: body)
        server.setResource("/x", body: TestData.bytes(count: 20_000, seed: 3616))
        let directory = try TemporaryDirectory()
        #expect(try HaulBinary.run(["-q", "-d", directory.path, server.url("/x.haul-partial")]).status == 0)
        let finished = directory.file("x.haul-partial")
        #expect(Disk.difference(finished, body) == nil)
        // WHEN another download's partial would be at that path (-o x)
        let other = try HaulBinary.run(["-o", directory.file("x"), server.url("/x")])
        // THEN the finished file is not deleted or written through (the other download is refused,
        // or keeps its partial elsewhere), and running the first again is still already complete
        #expect(Disk.difference(finished, body) == nil, "stderr: \(other.stderr)")
        #expect(other.status == 7, "stderr: \(other.stderr)")
        let again = try HaulBinary.run(["-d", directory.path, server.url("/x.haul-partial")])
        #expect(again.status == 0 && again.stderr.contains("already complete"), "stderr: \(again.stderr)")
    }
}

extension CLIRunAgainDirectoryTests {
    @Test(arguments: [false, true])
    func aRequestWithItsOwnHeaderRunAgainIsInTheWay(intoDirectory: Bool) throws {
        // GIVEN a file haul downloaded with a header of its own (-H), which the mark never proves
        let server = try FaultServer()
        let body = TestData.bytes(count: 20_000, seed: 3617)
        server.setResource("/h.bin", body: body)
        let directory = try TemporaryDirectory()
        let destination = intoDirectory ? ["-d", directory.path] : ["-o", directory.file("h.bin")]
        #expect(try HaulBinary.run(["-q", "-H", "X-Account: 1"] + destination + [server.url("/h.bin")]).status == 0)
        // WHEN the same command runs again
        let again = try HaulBinary.run(["-H", "X-Account: 1"] + destination + [server.url("/h.bin")])
        // THEN it is not already complete: the file is in the way (exit 7), untouched
        #expect(again.status == 7, "stderr: \(again.stderr)")
        #expect(!again.stderr.contains("already complete"), "stderr: \(again.stderr)")
        #expect(Disk.difference(directory.file("h.bin"), body) == nil)
    }
}
