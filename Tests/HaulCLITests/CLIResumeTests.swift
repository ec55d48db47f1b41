import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Interrupted runs (a dropped connection, SIGINT, SIGTERM) keep their bytes, and the next run resumes them.
@Suite("haul resume")
struct CLIResumeTests {
    @Test func droppedConnectionKeepsThePartialAndTheNextRunResumes() throws {
        // GIVEN a 2 MiB resource whose first answer is cut after 700 000 bytes
        let server = try FaultServer()
        let body = TestData.bytes(count: 2 << 20, seed: 21)
        let cut = 700_000
        server.setResource("/drop.bin", body: body)
        server.enqueueFaults("/drop.bin", [.dropAfter(bytes: cut)])
        let directory = try TemporaryDirectory()
        let output = directory.file("drop.bin")

        // WHEN haul runs without retries
        let first = try HaulBinary.run(["-q", "--retry", "0", "-o", output, server.url("/drop.bin")])
        // THEN it exits 3 and keeps the bytes it got as a partial with its record
        #expect(first.status == 3, "stderr: \(first.stderr)")
        #expect(!Disk.exists(output))
        #expect(Disk.size(output + ".haul-partial") == Int64(cut))
        #expect(Disk.exists(output + ".haul-resume"))

        // WHEN haul runs again
        let second = try HaulBinary.run(["-q", "--retry", "0", "-o", output, server.url("/drop.bin")])
        // THEN it completes bit-exact, asking only for the rest
        #expect(second.status == 0, "stderr: \(second.stderr)")
        #expect(Disk.difference(output, body) == nil)
        #expect(!Disk.exists(output + ".haul-partial"))
        #expect(!Disk.exists(output + ".haul-resume"))
        let requests = server.requests
        #expect(requests.count == 2)
        #expect(requests.first?.header("Range") == nil)
        #expect(requests.last?.header("Range") == "bytes=\(cut)-")
        #expect(requests.last?.header("If-Range") == "\"v1\"")
        #expect(server.bodyBytesSent("/drop.bin") == body.count)
    }

    @Test func aResumedDownloadsFiguresNameWhatTheyAre() throws {
        // GIVEN a 2 MiB file whose first answer is cut after 700 000 bytes, and a first run that kept them
        let server = try FaultServer()
        let body = TestData.bytes(count: 2 << 20, seed: 22)
        server.setResource("/f.bin", body: body)
        server.enqueueFaults("/f.bin", [.dropAfter(bytes: 700_000)])
        let directory = try TemporaryDirectory()
        let output = directory.file("f.bin")
        _ = try HaulBinary.run(["-q", "--retry", "0", "-o", output, server.url("/f.bin")])

        // WHEN the second run completes it
        let second = try HaulBinary.run(["--retry", "0", "-o", output, server.url("/f.bin")])
        let json = try HaulBinary.run(["--json", "--force", "--retry", "0", "-o", directory.file("g.bin"), server.url("/f.bin")])

        // THEN the message gives the file's size, where it resumed, and this run's bytes apart
        #expect(second.status == 0, "stderr: \(second.stderr)")
        #expect(second.stderr.contains("(2.0 MiB; resumed from 683.6 KiB, this run 1.3 MiB in "), "\(second.stderr)")
        // AND a download done in one run says so in --json (resumedFrom 0)
        let done = JSONLines.parse(json.stdoutString).first { ($0["event"] as? String) == "completed" }
        #expect(done?["resumedFrom"] as? Int == 0, "\(json.stdoutString)")
    }

    @Test func droppedConnectionIsRetriedWithinOneRun() throws {
        // GIVEN a resource whose first two answers are cut
        let server = try FaultServer()
        let body = TestData.bytes(count: 1 << 20, seed: 22)
        server.setResource("/flaky.bin", body: body)
        server.enqueueFaults("/flaky.bin", [.dropAfter(bytes: 100_000), .dropAfter(bytes: 100_000)])
        let directory = try TemporaryDirectory()
        let output = directory.file("flaky.bin")
        // WHEN haul runs with retries and a short wait
        let result = try HaulBinary.run(["--json", "--retry", "3", "--retry-wait", "0.05", "-o", output, server.url("/flaky.bin")])
        // THEN it completes bit-exact in one run, having resumed twice
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(output, body) == nil)
        let events = JSONLines.events(JSONLines.parse(result.stdoutString))
        #expect(events.filter { $0 == "retrying" }.count == 2)
        #expect(server.requests.map { $0.header("Range") } == [nil, "bytes=100000-", "bytes=200000-"])
    }

    @Test func changedFileOnTheServerRestartsInsteadOfSplicing() throws {
        // GIVEN a partial of version 1 left by a dropped connection
        let server = try FaultServer()
        let old = TestData.bytes(count: 400_000, seed: 23)
        let new = TestData.bytes(count: 450_000, seed: 24)
        server.setResource("/v.bin", body: old, etag: "\"old\"")
        server.enqueueFaults("/v.bin", [.dropAfter(bytes: 150_000)])
        let directory = try TemporaryDirectory()
        let output = directory.file("v.bin")
        let first = try HaulBinary.run(["-q", "--retry", "0", "-o", output, server.url("/v.bin")])
        #expect(first.status == 3)
        // WHEN the file changes on the server and haul runs again
        server.setResource("/v.bin", body: new, etag: "\"new\"")
        let second = try HaulBinary.run(["-q", "--retry", "0", "-o", output, server.url("/v.bin")])
        // THEN the result is exactly the new version, never old bytes followed by new ones
        #expect(second.status == 0, "stderr: \(second.stderr)")
        #expect(Disk.difference(output, new) == nil)
    }

    @Test func droppedConnectionToStandardOutputIsResumedSeamlessly() throws {
        // GIVEN a resource whose first answer is cut after 100 000 bytes
        let server = try FaultServer()
        let body = TestData.bytes(count: 400_000, seed: 27)
        server.setResource("/pipe.bin", body: body)
        server.enqueueFaults("/pipe.bin", [.dropAfter(bytes: 100_000)])
        // WHEN haul writes it to stdout, with one retry allowed
        let result = try HaulBinary.run(["-q", "--retry", "1", "--retry-wait", "0.05", "-o", "-", server.url("/pipe.bin")])
        // THEN stdout is the body exactly once: the retry continued at byte 100 000
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Bytes.difference(result.stdout, body) == nil)
        #expect(server.requests.last?.header("Range") == "bytes=100000-")
    }

    @Test func stalledServerExitsThreeAfterTheStallTimeout() throws {
        // GIVEN a server that sends 50 000 bytes and then nothing for 20 s
        let server = try FaultServer()
        server.setResource("/stall.bin", body: TestData.bytes(count: 200_000, seed: 28))
        server.enqueueFaults("/stall.bin", [.stall(afterBytes: 50_000, seconds: 20)])
        let directory = try TemporaryDirectory()
        let output = directory.file("stall.bin")
        // WHEN haul runs with a 1 s stall timeout and no retries
        let started = Date()
        let result = try HaulBinary.run(["-q", "--retry", "0", "--stall-timeout", "1", "-o", output, server.url("/stall.bin")])
        // THEN it gives up long before the server would, with the network exit code, keeping the bytes
        #expect(result.status == 3, "stderr: \(result.stderr)")
        #expect(Date().timeIntervalSince(started) < 10)
        #expect(Disk.size(output + ".haul-partial") == 50_000)
    }

    @Test func retriesRunOutWithTheNetworkExitCode() throws {
        // GIVEN a resource whose every answer is cut right after the headers
        let server = try FaultServer()
        server.setResource("/cut.bin", body: TestData.bytes(count: 100_000, seed: 29))
        server.setPersistentFaults("/cut.bin", [.dropAfter(bytes: 0)])
        let directory = try TemporaryDirectory()
        // WHEN haul allows two retries
        let result = try HaulBinary.run(["-q", "--retry", "2", "--retry-wait", "0.05", "-o", directory.file("cut.bin"), server.url("/cut.bin")])
        // THEN it makes three requests in all and exits 3
        #expect(result.status == 3, "stderr: \(result.stderr)")
        #expect(server.requests.count == 3)
    }

    @Test func directoryDownloadResumesAfterSigintUnderTheServerName() throws {
        // GIVEN a throttled resource downloaded with -d
        let server = try FaultServer()
        let body = TestData.bytes(count: 600_000, seed: 30)
        server.setResource("/named.bin", body: body)
        server.enqueueFaults("/named.bin", [.throttle(bytesPerSecond: 200_000)])
        let directory = try TemporaryDirectory()
        let arguments = ["-q", "--retry", "0", "-d", directory.path, server.url("/named.bin")]
        let running = try RunningHaul(arguments)
        #expect(Disk.waitUntil(timeout: 10) { server.bodyBytesSent("/named.bin") > 100_000 })
        // WHEN it is interrupted and run again
        running.send(SIGINT)
        #expect(try running.wait(timeout: 20) == .exited(130), "stderr: \(running.stderr)")
        #expect(!Disk.exists(directory.file("named.bin")))
        let second = try HaulBinary.run(arguments)
        // THEN the second run resumes and the file appears under its name, with nothing else left
        #expect(second.status == 0, "stderr: \(second.stderr)")
        #expect(Disk.difference(directory.file("named.bin"), body) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["named.bin"])
        #expect(server.requests.last?.header("Range")?.hasPrefix("bytes=") == true)
    }

    @Test func sigintPausesWith130AndTheNextRunCompletes() throws {
        try interruptAndResume(signal: SIGINT, expectedStatus: 130)
    }

    @Test func sigtermPausesWith143AndTheNextRunCompletes() throws {
        try interruptAndResume(signal: SIGTERM, expectedStatus: 143)
    }

    private func interruptAndResume(signal: Int32, expectedStatus: Int32) throws {
        // GIVEN a 1 MiB resource served at 200 KB/s the first time
        let server = try FaultServer()
        let body = TestData.bytes(count: 1 << 20, seed: 25)
        server.setResource("/slow.bin", body: body)
        server.enqueueFaults("/slow.bin", [.throttle(bytesPerSecond: 200_000)])
        let directory = try TemporaryDirectory()
        let output = directory.file("slow.bin")

        // WHEN haul is signalled about a second into the download
        let running = try RunningHaul(["--retry", "0", "-o", output, server.url("/slow.bin")])
        #expect(Disk.waitUntil(timeout: 10) { (Disk.size(output + ".haul-partial") ?? 0) > 0 })
        usleep(800_000)
        running.send(signal)
        let ending = try running.wait(timeout: 20)

        // THEN it exits (not dies) with the documented status, keeping partial and record
        #expect(ending == .exited(expectedStatus), "stderr: \(running.stderr)")
        #expect(running.stderr.contains("run the same command again"), "stderr: \(running.stderr)")
        #expect(!Disk.exists(output))
        let kept = Disk.size(output + ".haul-partial") ?? 0
        #expect(kept > 0 && kept < Int64(body.count), "partial has \(kept) bytes")
        #expect(Disk.exists(output + ".haul-resume"))

        // WHEN haul runs again
        let second = try HaulBinary.run(["-q", "--retry", "0", "-o", output, server.url("/slow.bin")])
        // THEN it resumes from the kept bytes and completes bit-exact
        #expect(second.status == 0, "stderr: \(second.stderr)")
        #expect(Disk.difference(output, body) == nil)
        #expect(!Disk.exists(output + ".haul-partial"))
        #expect(!Disk.exists(output + ".haul-resume"))
        #expect(server.requests.last?.header("Range") == "bytes=\(kept)-")
    }

    @Test func jsonReportsPausedOnSigint() throws {
        // GIVEN a throttled download with --json
        let server = try FaultServer()
        server.setResource("/p.bin", body: TestData.bytes(count: 1 << 20, seed: 26))
        server.setPersistentFaults("/p.bin", [.throttle(bytesPerSecond: 200_000)])
        let directory = try TemporaryDirectory()
        let output = directory.file("p.bin")
        let running = try RunningHaul(["--json", "--retry", "0", "-o", output, server.url("/p.bin")])
        #expect(Disk.waitUntil(timeout: 10) { (Disk.size(output + ".haul-partial") ?? 0) > 0 })
        // WHEN it is interrupted
        usleep(300_000)
        running.send(SIGINT)
        let ending = try running.wait(timeout: 20)
        // THEN it exits 130 and the event stream is well formed and ends in "paused"
        #expect(ending == .exited(130))
        let objects = JSONLines.parse(running.stdout)
        let events = JSONLines.events(objects)
        #expect(events.first == "started")
        #expect(events.last == "paused")
        let pausedBytes = (objects.last?["bytes"] as? NSNumber)?.int64Value
        #expect(pausedBytes == Disk.size(output + ".haul-partial"))
    }
}
