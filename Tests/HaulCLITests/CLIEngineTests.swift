import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `--engine curl|urlsession` end to end: the real binary against nginx, each engine through the
/// same command lines; what URLSession cannot do here is refused up front with exit 2.
@Suite("haul --engine against nginx", .serialized)
struct CLIEngineTests {
    struct Fixture {
        let root: TemporaryDirectory
        let work: TemporaryDirectory
        let nginx: NginxServer
        let data: [UInt8]

        init(size: Int = 20 << 20, limitRate: String? = nil) throws {
            root = try TemporaryDirectory(prefix: "haul-cli-engine-root")
            data = TestData.bytes(count: size, seed: 151)
            try Disk.write(data, to: root.file("file.bin"))
            nginx = try NginxServer(documentRoot: root.path, limitRate: limitRate)
            work = try TemporaryDirectory(prefix: "haul-cli-engine-out")
        }
    }

    @Test(.timeLimit(.minutes(1)), arguments: ["curl", "urlsession"])
    func eachEngineDownloadsTheExactBytesAlsoWithSegments(engine: String) throws {
        let fixture = try Fixture()
        let single = try HaulBinary.run(
            ["-q", "--engine", engine, "-x", "1", "-o", fixture.work.file("one.bin"), fixture.nginx.baseURL + "/file.bin"])
        let segmented = try HaulBinary.run(
            ["-q", "--engine", engine, "-x", "4", "-o", fixture.work.file("four.bin"), fixture.nginx.baseURL + "/file.bin"])
        #expect(single.status == 0, "\(single.stderr)")
        #expect(segmented.status == 0, "\(segmented.stderr)")
        #expect(Disk.difference(fixture.work.file("one.bin"), fixture.data) == nil)
        #expect(Disk.difference(fixture.work.file("four.bin"), fixture.data) == nil)
        // -x 4: the first request asks for the whole file, three more connections for ranges of it.
        #expect(fixture.nginx.accessLog().filter { $0.status == 206 }.count >= 3, "\(fixture.nginx.accessLog())")
    }

    @Test(.timeLimit(.minutes(2)))
    func aKilledURLSessionRunIsResumedByRangeOnTheSameEngine() throws {
        // GIVEN a download at 4 MiB/s on the urlsession engine, killed with SIGKILL part-way
        let fixture = try Fixture(limitRate: "4m")
        let output = fixture.work.file("killed.bin")
        let url = fixture.nginx.baseURL + "/limited/file.bin"
        let running = try RunningHaul(["-q", "--engine", "urlsession", "-x", "1", "-o", output, url])
        try #require(Disk.waitUntil(timeout: 20) { (Disk.size(output + ".haul-partial") ?? 0) > 6 << 20 })
        running.send(SIGKILL)
        _ = try running.wait()
        #expect(Disk.exists(output + ".haul-partial"))
        // WHEN it runs again, requiring a resume
        let again = try HaulBinary.run(["-q", "--engine", "urlsession", "-c", "-x", "1", "-o", output, url], timeout: 60)
        // THEN the file is bit-exact and the second run asked only for the rest
        #expect(again.status == 0, "\(again.stderr)")
        #expect(Disk.difference(output, fixture.data) == nil)
        let last = try #require(fixture.nginx.accessLog().last)
        #expect(last.status == 206, "\(fixture.nginx.accessLog())")
        #expect(last.bodyBytesSent < fixture.data.count - (6 << 20))
    }

    @Test(.timeLimit(.minutes(1)))
    func aBatchAndTheQueueRunOnURLSession() throws {
        let fixture = try Fixture(size: 1 << 20)
        let store = try TemporaryDirectory(prefix: "haul-cli-engine-store")
        let url = fixture.nginx.baseURL + "/file.bin"
        let batch = try HaulBinary.run(
            ["-q", "--engine", "urlsession", "--state", store.path, "-d", fixture.work.file("batch"), url, url + "?copy=2"])
        #expect(batch.status == 0, "\(batch.stderr)")
        #expect(Disk.difference(fixture.work.file("batch/file.bin"), fixture.data) == nil)
        let added = try HaulBinary.run(["queue", "add", "--state", store.path, "-o", fixture.work.file("queued.bin"), url])
        #expect(added.status == 0, "\(added.stderr)")
        let run = try HaulBinary.run(["queue", "run", "-q", "--engine", "urlsession", "--state", store.path])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(Disk.difference(fixture.work.file("queued.bin"), fixture.data) == nil)
    }

    @Test(arguments: [
        (["--cacert", "/etc/hosts"], "CA file"),
        (["--insecure"], "--insecure"),
        (["--proxy", "http://127.0.0.1:9"], "--proxy"),
        (["--limit-rate", "1m"], "--limit-rate"),
    ])
    func whatURLSessionCannotDoHereIsRefusedUpFront(extra: [String], named: String) throws {
        let work = try TemporaryDirectory(prefix: "haul-cli-engine-refused")
        let output = work.file("f")
        let result = try HaulBinary.run(["--engine", "urlsession"] + extra + ["-o", output, "http://127.0.0.1:9/f"])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains(named), "\(result.stderr)")
        #expect(result.stderr.contains("--engine curl"), "\(result.stderr)")
        #expect(!Disk.exists(output) && !Disk.exists(output + ".haul-partial"))
    }

    @Test(.timeLimit(.minutes(1)))
    func aQueuedItemTheEngineCannotCarryOutFailsWithTheEngineExitCode() throws {
        // GIVEN an item queued with --cacert (which the queue keeps), run on the urlsession engine
        let fixture = try Fixture(size: 1 << 20)
        let store = try TemporaryDirectory(prefix: "haul-cli-engine-store")
        let ca = fixture.work.file("ca.pem")
        try Disk.write(Array("not used".utf8), to: ca)
        let output = fixture.work.file("queued.bin")
        let added = try HaulBinary.run(["queue", "add", "--state", store.path, "--cacert", ca, "-o", output, fixture.nginx.baseURL + "/file.bin"])
        #expect(added.status == 0, "\(added.stderr)")
        let run = try HaulBinary.run(["queue", "run", "--engine", "urlsession", "--state", store.path])
        // THEN it fails with exit 11 naming what the engine cannot do, nothing sent, not retried
        #expect(run.status == 11, "\(run.stderr)")
        #expect(run.stderr.contains("CA file"), "\(run.stderr)")
        #expect(fixture.nginx.accessLog().isEmpty)
        // AND the queue shows the item failed, with the reason
        let list = try HaulBinary.run(["queue", "list", "--state", store.path])
        #expect(list.stdoutString.contains("failed"), "\(list.stdoutString)")
    }

    @Test func anUnknownEngineIsAUsageError() throws {
        let result = try HaulBinary.run(["--engine", "wget", "http://127.0.0.1:9/f"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("--engine takes curl or urlsession"), "\(result.stderr)")
        let serve = try HaulBinary.run(["serve", "--engine", "urlsession", "--listen", "127.0.0.1:0"])
        #expect(serve.status == 2, "\(serve.stderr)")
        #expect(serve.stderr.contains("speed limits"), "\(serve.stderr)")
    }
}
