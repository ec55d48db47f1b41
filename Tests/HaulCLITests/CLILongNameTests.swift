import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A final name the file system accepts (up to 255 bytes) is downloaded, resumed, checked and
/// cleaned up like any other: the files kept beside it (`.haul-partial`, `.haul-resume`,
/// `.haul-segments`, `.haul-rejected`) get a shortened, still unique name when the final name
/// plus their suffix would not fit. A name the file system refuses is refused before any request.
@Suite("haul: long file names")
struct CLILongNameTests {
    /// A name of `bytes` UTF-8 bytes: two-byte letters (so a cut must respect characters), then
    /// `tail` and ".bin".
    static func longName(bytes: Int, tail: String = "") -> String {
        let fixed = tail.utf8.count + ".bin".utf8.count
        let letters = (bytes - fixed) / 2
        let pad = (bytes - fixed) % 2 == 1 ? "x" : ""
        return String(repeating: "é", count: letters) + pad + tail + ".bin"
    }

    /// The names in `directory` that are Haul's own files (everything with ".haul-" in it).
    static func sidecars(in directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.contains(".haul-") }.sorted()
    }

    /// The one name in `directory` ending in `suffix`, if exactly one does.
    static func onlySidecar(in directory: String, endingIn suffix: String) -> String? {
        let found = sidecars(in: directory).filter { $0.hasSuffix(suffix) }
        return found.count == 1 ? found[0] : nil
    }

    @Test(.timeLimit(.minutes(1)), arguments: [243, 250, 255])
    func aLongNameGivenWithDashODownloadsWhole(_ bytes: Int) throws {
        // GIVEN a resource and a name of 243 to 255 bytes (which the file system accepts)
        let server = try FaultServer()
        let body = TestData.bytes(count: 4 << 20, seed: 1_101)
        server.setResource("/f.bin", body: body)
        let work = try TemporaryDirectory(prefix: "haul-long-o")
        let name = Self.longName(bytes: bytes)
        #expect(name.utf8.count == bytes)

        // WHEN haul downloads it under that name, on one connection and on four
        let one = try HaulBinary.run(["-q", "--retry", "0", "-x", "1", "-o", work.file(name), server.url("/f.bin")])
        _ = try? FileManager.default.removeItem(atPath: work.file(name))
        let four = try HaulBinary.run(["-q", "--retry", "0", "-x", "4", "-o", work.file(name), server.url("/f.bin")])

        // THEN both exit 0 with the whole file under exactly that name, and nothing left beside it
        #expect(one.status == 0, "stderr: \(one.stderr)")
        #expect(four.status == 0, "stderr: \(four.stderr)")
        #expect(Disk.difference(work.file(name), body) == nil)
        #expect(Self.sidecars(in: work.path).isEmpty, "\(Self.sidecars(in: work.path))")
    }

    @Test(.timeLimit(.minutes(2)), arguments: [1, 4])
    func aKilledDownloadUnderALongNameResumesToTheWholeFile(_ connections: Int) throws {
        // GIVEN a throttled 8 MiB download under a 250-byte name, killed with SIGKILL part-way
        let server = try FaultServer()
        let body = TestData.bytes(count: 8 << 20, seed: 1_102)
        server.setResource("/f.bin", body: body)
        server.setPersistentFaults("/f.bin", [.throttle(bytesPerSecond: 512 << 10)])
        let work = try TemporaryDirectory(prefix: "haul-long-kill")
        let output = work.file(Self.longName(bytes: 250))
        let arguments = ["-q", "--retry", "0", "-x", String(connections), "-o", output, server.url("/f.bin")]
        let running = try RunningHaul(arguments)
        let started = Disk.waitUntil(timeout: 20) { Self.onlySidecar(in: work.path, endingIn: ".haul-partial") != nil }
        #expect(started, "no partial appeared; stderr: \(running.stderr); files: \(Self.sidecars(in: work.path))")
        // About 768 KiB per connection, at most 3 MiB in all
        usleep(1_500_000)
        running.send(SIGKILL)
        #expect(try running.wait() == .signalled(SIGKILL))
        // Every file kept beside it has a name the file system took (so at most 255 bytes)
        let partial = try #require(Self.onlySidecar(in: work.path, endingIn: ".haul-partial"))
        #expect(Self.sidecars(in: work.path).allSatisfy { $0.utf8.count <= 255 })
        #expect(partial.hasPrefix("éé"), "the partial's name no longer shows the file's: \(partial)")

        // WHEN the same command runs again, unthrottled
        server.setPersistentFaults("/f.bin", [])
        let requestsBefore = server.requests.count
        let again = try HaulBinary.run(arguments)

        // THEN it completes bit-exact, continuing what was on disk rather than starting over
        #expect(again.status == 0, "stderr: \(again.stderr)")
        #expect(Disk.difference(output, body) == nil)
        let ranges = server.requests.dropFirst(requestsBefore).compactMap { $0.header("Range") }
        #expect(!ranges.isEmpty && !ranges.contains { $0.hasPrefix("bytes=0-") }, "\(ranges)")
        #expect(Self.sidecars(in: work.path).isEmpty, "\(Self.sidecars(in: work.path))")
    }

    @Test(.timeLimit(.minutes(1)))
    func twoLongNamesSharingTheirStartKeepTheirOwnPartials() throws {
        // GIVEN two 250-byte names that differ only in their last letters, each download cut part-way
        let server = try FaultServer()
        let first = TestData.bytes(count: 900_000, seed: 1_103)
        let second = TestData.bytes(count: 900_000, seed: 1_104)
        server.setResource("/a.bin", body: first)
        server.setResource("/b.bin", body: second)
        server.enqueueFaults("/a.bin", [.dropAfter(bytes: 300_000)])
        server.enqueueFaults("/b.bin", [.dropAfter(bytes: 500_000)])
        let work = try TemporaryDirectory(prefix: "haul-long-pair")
        let outputA = work.file(Self.longName(bytes: 250, tail: "-a"))
        let outputB = work.file(Self.longName(bytes: 250, tail: "-b"))
        let cutA = try HaulBinary.run(["-q", "--retry", "0", "-x", "1", "-o", outputA, server.url("/a.bin")])
        let cutB = try HaulBinary.run(["-q", "--retry", "0", "-x", "1", "-o", outputB, server.url("/b.bin")])
        #expect(cutA.status == 3, "stderr: \(cutA.stderr)")
        #expect(cutB.status == 3, "stderr: \(cutB.stderr)")
        // THEN each kept a partial of its own
        let partials = Self.sidecars(in: work.path).filter { $0.hasSuffix(".haul-partial") }
        #expect(partials.count == 2, "\(Self.sidecars(in: work.path))")

        // WHEN both run again
        let againA = try HaulBinary.run(["-q", "--retry", "0", "-x", "1", "-o", outputA, server.url("/a.bin")])
        let againB = try HaulBinary.run(["-q", "--retry", "0", "-x", "1", "-o", outputB, server.url("/b.bin")])

        // THEN each resumes its own bytes into its own whole file
        #expect(againA.status == 0, "stderr: \(againA.stderr)")
        #expect(againB.status == 0, "stderr: \(againB.stderr)")
        #expect(Disk.difference(outputA, first) == nil)
        #expect(Disk.difference(outputB, second) == nil)
        let ranges = server.requests.compactMap { $0.header("Range") }
        #expect(ranges.contains("bytes=300000-") && ranges.contains("bytes=500000-"), "\(ranges)")
        #expect(Self.sidecars(in: work.path).isEmpty, "\(Self.sidecars(in: work.path))")
    }

    @Test(.timeLimit(.minutes(1)))
    func aNameTheFileSystemRefusesIsRefusedBeforeAnyRequest() throws {
        // GIVEN a name of 256 bytes, one more than a file system takes
        let server = try FaultServer()
        server.setResource("/f.bin", body: TestData.bytes(count: 100_000, seed: 1_105))
        let work = try TemporaryDirectory(prefix: "haul-long-refused")
        let name = Self.longName(bytes: 256)

        // WHEN haul is asked to save under it
        let result = try HaulBinary.run(["-q", "--retry", "0", "-o", work.file(name), server.url("/f.bin")])

        // THEN it is a usage error (exit 2) naming the limit, before any request, leaving nothing
        #expect(result.status == 2, "\(result.status): \(result.stderr)")
        #expect(result.stderr.contains("256 bytes") && result.stderr.contains("255"), "\(result.stderr)")
        #expect(server.requests.isEmpty)
        #expect(Self.sidecars(in: work.path).isEmpty, "\(Self.sidecars(in: work.path))")
    }

    @Test(.timeLimit(.minutes(1)))
    func aLongNameFromTheServerOrTheURLIsKept() throws {
        // GIVEN a response naming a file of 255 bytes, and a URL whose last segment is 250 bytes
        let server = try FaultServer()
        let body = TestData.bytes(count: 700_000, seed: 1_106)
        let given = String(repeating: "n", count: 251) + ".bin"
        server.setResource("/named", body: body, extraHeaders: [("Content-Disposition", "attachment; filename=\"\(given)\"")])
        let segment = String(repeating: "u", count: 246) + ".bin"
        server.setResource("/" + segment, body: body)
        server.enqueueFaults("/" + segment, [.dropAfter(bytes: 200_000)])
        let work = try TemporaryDirectory(prefix: "haul-long-given")

        // WHEN haul downloads the first into a directory
        let named = try HaulBinary.run(["-q", "--retry", "0", "-d", work.path, server.url("/named")])
        // THEN it is saved whole under the server's name
        #expect(named.status == 0, "stderr: \(named.stderr)")
        #expect(Disk.difference(work.file(given), body) == nil)

        // WHEN the second is continued (-c) into the directory, cut once and run again
        let cut = try HaulBinary.run(["-q", "--retry", "0", "-c", "-d", work.path, server.url("/" + segment)])
        #expect(cut.status == 3, "stderr: \(cut.stderr)")
        let resumed = try HaulBinary.run(["-q", "--retry", "0", "-c", "-d", work.path, server.url("/" + segment)])
        // THEN it resumes into the whole file under the URL's name
        #expect(resumed.status == 0, "stderr: \(resumed.stderr)")
        #expect(Disk.difference(work.file(segment), body) == nil)
        #expect(server.requests.last?.header("Range") == "bytes=200000-")
        #expect(Self.sidecars(in: work.path).isEmpty, "\(Self.sidecars(in: work.path))")
    }

    @Test(.timeLimit(.minutes(1)))
    func twoResponsesNamingTheSame255ByteFileAreBothKept() throws {
        // GIVEN two resources whose responses both name a file of 255 bytes
        let server = try FaultServer()
        let bodies = [TestData.bytes(count: 300_000, seed: 1_110), TestData.bytes(count: 300_000, seed: 1_111)]
        let given = String(repeating: "d", count: 251) + ".bin"
        for (index, body) in bodies.enumerated() {
            server.setResource("/\(index)", body: body, extraHeaders: [("Content-Disposition", "attachment; filename=\"\(given)\"")])
        }
        let work = try TemporaryDirectory(prefix: "haul-long-twice")
        let state = try TemporaryDirectory(prefix: "haul-long-twice-state")

        // WHEN one batch downloads both into a directory, one after the other
        let result = try HaulBinary.run(
            ["-q", "--retry", "0", "-j", "1", "--state", state.path, "-d", work.path, server.url("/0"), server.url("/1")])

        // THEN both are kept: the second under a unique name the file system takes
        #expect(result.status == 0, "\(result.status): \(result.stderr)")
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: work.path)) ?? []).sorted()
        #expect(names.count == 2, "\(names)")
        #expect(names.allSatisfy { $0.utf8.count <= 255 && $0.hasSuffix(".bin") }, "\(names.map(\.utf8.count))")
        let contents = names.compactMap { Disk.bytes(work.file($0)) }
        #expect(contents.contains(bodies[0]) && contents.contains(bodies[1]))
    }

    @Test(.timeLimit(.minutes(1)))
    func aWrongChecksumUnderALongNameSetsTheDataAside() throws {
        // GIVEN a download under a 250-byte name whose expected checksum is wrong
        let server = try FaultServer()
        let body = TestData.bytes(count: 500_000, seed: 1_107)
        server.setResource("/f.bin", body: body)
        let work = try TemporaryDirectory(prefix: "haul-long-rejected")
        let output = work.file(Self.longName(bytes: 250))
        let wrong = "sha256=" + String(repeating: "0", count: 64)

        // WHEN it is downloaded
        let result = try HaulBinary.run(["-q", "--retry", "0", "--checksum", wrong, "-o", output, server.url("/f.bin")])

        // THEN it exits 8, the final name is not used, and the data is set aside as the rejected copy
        #expect(result.status == 8, "\(result.status): \(result.stderr)")
        #expect(!Disk.exists(output))
        let rejected = try #require(Self.onlySidecar(in: work.path, endingIn: ".haul-rejected"), "\(Self.sidecars(in: work.path))")
        #expect(Disk.difference(work.file(rejected), body) == nil)
        #expect(result.stderr.contains(rejected), "the message does not say where the data is: \(result.stderr)")
    }

    @Test(.timeLimit(.minutes(1)))
    func theQueueRunsAndCancelsALongName() throws {
        // GIVEN two queued downloads under 250-byte names: one throttled and interrupted, then paused
        let server = try FaultServer()
        let body = TestData.bytes(count: 4 << 20, seed: 1_108)
        server.setResource("/slow.bin", body: body)
        server.setResource("/fast.bin", body: body)
        server.setPersistentFaults("/slow.bin", [.throttle(bytesPerSecond: 1 << 20)])
        let store = try StoreFixture()
        let out = try TemporaryDirectory(prefix: "haul-long-queue")
        let slow = out.file(Self.longName(bytes: 250, tail: "-slow"))
        let fast = out.file(Self.longName(bytes: 250, tail: "-fast"))
        let fastID = try #require(StoreFixture.ids(try store.haul(["add", server.url("/fast.bin"), "-o", fast])).first)
        let run = try store.haul(["run", "-q", "--retry", "0"])
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(try store.items().state(fastID) == "completed")
        #expect(Disk.difference(fast, body) == nil)

        let slowID = try #require(StoreFixture.ids(try store.haul(["add", server.url("/slow.bin"), "-o", slow])).first)
        let running = try RunningHaul(["queue", "run", "-q", "--retry", "0", "--state", store.path])
        let started = Disk.waitUntil(timeout: 10) {
            guard let partial = Self.onlySidecar(in: out.path, endingIn: ".haul-partial") else { return false }
            return (Disk.size(out.file(partial)) ?? 0) > 200_000
        }
        #expect(started, "no partial grew; stderr: \(running.stderr); files: \(Self.sidecars(in: out.path))")
        running.send(SIGINT)
        #expect(try running.wait(timeout: 15) == .exited(130), "stderr: \(running.stderr)")
        #expect(try store.haul(["pause", String(slowID)]).status == 0)

        // WHEN it is cancelled with --delete
        let cancel = try store.haul(["cancel", String(slowID), "--delete"])

        // THEN its partial is found and removed, and nothing is left beside the names
        #expect(cancel.status == 0, "stderr: \(cancel.stderr)")
        #expect(try store.items().state(slowID) == "cancelled")
        #expect(!Disk.exists(slow))
        #expect(Self.sidecars(in: out.path).isEmpty, "\(Self.sidecars(in: out.path))")
    }

    @Test(.timeLimit(.minutes(1)))
    func serveCompletesAnAddUriWithA250ByteOut() throws {
        // GIVEN haul serve and a resource
        let server = try FaultServer()
        let body = TestData.bytes(count: 2 << 20, seed: 1_109)
        server.setResource("/f.bin", body: body)
        let work = try TemporaryDirectory(prefix: "haul-long-serve")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("dl"))
        defer { _ = try? serve.stop() }
        let name = Self.longName(bytes: 250)

        // WHEN a client adds it with an `out` of 250 bytes
        let gid = try #require(try serve.result("aria2.addUri", [[server.url("/f.bin")], ["out": name]]) as? String)

        // THEN it completes, whole, under that name
        var status: [String: Any]?
        let completed = Disk.waitUntil(timeout: 30) {
            status = (try? serve.result("aria2.tellStatus", [gid, ["status", "errorMessage"]])) as? [String: Any]
            let state = status?["status"] as? String
            return state == "complete" || state == "error"
        }
        #expect(completed && status?["status"] as? String == "complete", "\(status ?? [:]); stderr: \(serve.running.stderr)")
        #expect(Disk.difference(work.file("dl/" + name), body) == nil)
        #expect(Self.sidecars(in: work.file("dl")).isEmpty, "\(Self.sidecars(in: work.file("dl")))")
    }
}
