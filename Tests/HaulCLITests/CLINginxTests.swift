import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Large downloads from a real nginx, crashed (SIGKILL) and interrupted (SIGINT) and resumed.
@Suite("haul against nginx", .serialized)
struct CLINginxTests {
    /// Bytes a killed run may cost beyond what it kept: what sat in socket buffers and in curl.
    static let allowedWastePerKill = 4 << 20

    @Test(.timeLimit(.minutes(2)))
    func survivesRepeatedKillNineAndWastesLittle() throws {
        // GIVEN nginx serving a 200 MiB file at 20 MiB/s
        let root = try TemporaryDirectory(prefix: "haul-cli-nginx")
        let size = 200 << 20
        try TestData.writeFile(at: root.file("big.bin"), size: size, seed: 41)
        let expected = try TestData.sha256(ofFile: root.file("big.bin"))
        let nginx = try NginxServer(documentRoot: root.path, limitRate: "20m")
        let uri = "/limited/big.bin"
        let work = try TemporaryDirectory(prefix: "haul-cli-out")
        let output = work.file("big.bin")
        // One connection: this is the sequential path, whose partial file grows with the download
        // (segmented downloads have their own crash test).
        let arguments = ["-q", "-x", "1", "--retry", "0", "-o", output, nginx.baseURL + uri]

        // WHEN haul is killed with SIGKILL at random moments, six times, resuming each time
        let kills = 6
        var generator = SystemRandomNumberGenerator()
        var previousLength: Int64 = 0
        for round in 1...kills {
            let running = try RunningHaul(arguments)
            usleep(UInt32.random(in: 400_000...1_200_000, using: &generator))
            running.send(SIGKILL)
            let ending = try running.wait(timeout: 10)
            // THEN each run really was killed mid-download, and no kept byte is ever lost
            #expect(ending == .signalled(SIGKILL), "round \(round): \(ending), stderr: \(running.stderr)")
            let length = Disk.size(output + ".haul-partial") ?? 0
            #expect(length >= previousLength, "round \(round): the partial shrank from \(previousLength) to \(length)")
            #expect(length < Int64(size), "round \(round)")
            previousLength = length
        }
        #expect(!Disk.exists(output))
        #expect(previousLength > 0)

        // WHEN haul is finally left to finish
        let last = try HaulBinary.run(arguments, timeout: 60)

        // THEN the file is complete and identical to the source
        #expect(last.status == 0, "stderr: \(last.stderr)")
        #expect(!Disk.exists(output + ".haul-partial"))
        #expect(!Disk.exists(output + ".haul-resume"))
        #expect(Disk.size(output) == Int64(size))
        #expect(try TestData.sha256(ofFile: output) == expected)

        // AND nginx sent at most a few MiB per kill beyond the file's size
        _ = Disk.waitUntil(timeout: 10) { nginx.accessLog().filter { $0.uri == uri }.count >= kills + 1 }
        let entries = nginx.accessLog().filter { $0.uri == uri }
        let sent = entries.reduce(0) { $0 + $1.bodyBytesSent }
        let wasted = sent - size
        #expect(sent >= size)
        #expect(
            wasted <= Self.allowedWastePerKill * kills,
            "nginx sent \(sent) bytes for a \(size)-byte file over \(entries.count) requests (\(wasted) wasted)")
        // Every resumed request asked for the rest of the file, not for all of it again.
        #expect(entries.filter { $0.range == nil }.count <= 1, "ranges: \(entries.map { $0.range ?? "-" })")
    }

    @Test(.timeLimit(.minutes(2)))
    func largeUnthrottledDownloadInterruptedOnceResumesExactly() throws {
        // GIVEN nginx serving a 300 MiB file at full speed
        let root = try TemporaryDirectory(prefix: "haul-cli-nginx")
        let size = 300 << 20
        try TestData.writeFile(at: root.file("huge.bin"), size: size, seed: 42)
        let expected = try TestData.sha256(ofFile: root.file("huge.bin"))
        let nginx = try NginxServer(documentRoot: root.path)
        let work = try TemporaryDirectory(prefix: "haul-cli-out")
        let output = work.file("huge.bin")
        let arguments = ["-q", "-x", "1", "--retry", "0", "-o", output, nginx.baseURL + "/huge.bin"]

        // WHEN haul is interrupted with SIGINT once it has some 40 MiB
        let running = try RunningHaul(arguments)
        let reached = Disk.waitUntil(timeout: 30) { (Disk.size(output + ".haul-partial") ?? 0) >= 40 << 20 }
        running.send(SIGINT)
        let ending = try running.wait(timeout: 30)
        #expect(reached, "the partial never reached 40 MiB")

        // THEN it stops cleanly with 130 and keeps what it has
        #expect(ending == .exited(130), "stderr: \(running.stderr)")
        let kept = Disk.size(output + ".haul-partial") ?? 0
        #expect(kept >= 40 << 20 && kept < Int64(size), "kept \(kept) bytes")
        #expect(Disk.exists(output + ".haul-resume"))

        // WHEN haul runs again
        let second = try HaulBinary.run(arguments, timeout: 90)

        // THEN it resumes from the kept bytes and the result matches the source's SHA-256
        #expect(second.status == 0, "stderr: \(second.stderr)")
        #expect(Disk.size(output) == Int64(size))
        #expect(try TestData.sha256(ofFile: output) == expected)
        #expect(!Disk.exists(output + ".haul-partial"))
        #expect(!Disk.exists(output + ".haul-resume"))
        _ = Disk.waitUntil(timeout: 10) { nginx.accessLog().filter { $0.uri == "/huge.bin" }.count >= 2 }
        let ranges = nginx.accessLog().filter { $0.uri == "/huge.bin" }.map(\.range)
        #expect(ranges == [nil, "bytes=\(kept)-"])
    }
}
