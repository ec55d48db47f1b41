import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Segmented downloads (`-x 4`) from a real nginx, killed with SIGKILL and resumed.
@Suite("haul segmented against nginx", .serialized)
struct CLISegmentedTests {
    /// Bytes a killed run may cost beyond what it kept: four connections at 20 MiB/s for the 0.1 s
    /// between volatile checkpoints, plus what sat in socket buffers and in curl; generously rounded.
    static let allowedWastePerKill = 64 << 20

    @Test(.timeLimit(.minutes(2)))
    func segmentedSurvivesRepeatedKillNine() throws {
        // GIVEN nginx serving a 200 MiB file at 20 MiB/s per connection
        let root = try TemporaryDirectory(prefix: "haul-cli-seg")
        let size = 200 << 20
        try TestData.writeFile(at: root.file("big.bin"), size: size, seed: 51)
        let expected = try TestData.sha256(ofFile: root.file("big.bin"))
        let nginx = try NginxServer(documentRoot: root.path, limitRate: "20m")
        let uri = "/limited/big.bin"
        let work = try TemporaryDirectory(prefix: "haul-cli-seg-out")
        let output = work.file("big.bin")
        let arguments = ["-q", "-x", "4", "-o", output, nginx.baseURL + uri]

        // WHEN haul is killed with SIGKILL at random moments, four times, resuming each time
        // (four connections fetch about 80 MiB/s: each run lives 0.25-0.5 s, well short of the end)
        let kills = 4
        var generator = SystemRandomNumberGenerator()
        for round in 1...kills {
            let running = try RunningHaul(arguments)
            usleep(UInt32.random(in: 250_000...500_000, using: &generator))
            running.send(SIGKILL)
            let ending = try running.wait(timeout: 10)
            // THEN each run really was killed mid-download
            #expect(ending == .signalled(SIGKILL), "round \(round): \(ending), stderr: \(running.stderr)")
            #expect(!Disk.exists(output), "round \(round): the file was finished before the kill")
            #expect(Disk.exists(output + ".haul-partial"), "round \(round)")
        }

        // WHEN haul is finally left to finish
        let last = try HaulBinary.run(arguments, timeout: 60)

        // THEN the file is complete and identical to the source
        #expect(last.status == 0, "stderr: \(last.stderr)")
        #expect(!Disk.exists(output + ".haul-partial"))
        #expect(!Disk.exists(output + ".haul-resume"))
        #expect(Disk.size(output) == Int64(size))
        #expect(try TestData.sha256(ofFile: output) == expected)

        // AND nginx sent at most the file plus a bounded amount per kill
        _ = Disk.waitUntil(timeout: 5) {
            let entries = nginx.accessLog().filter { $0.uri == uri }
            return entries.reduce(0) { $0 + $1.bodyBytesSent } >= size
        }
        Thread.sleep(forTimeInterval: 0.5)  // lines of connections closed by the kill come last
        let entries = nginx.accessLog().filter { $0.uri == uri }
        let sent = entries.reduce(0) { $0 + $1.bodyBytesSent }
        let wasted = sent - size
        print(
            "segmented kill -9 x\(kills): nginx sent \(sent) bytes for a \(size)-byte file over \(entries.count) requests "
                + "(\(wasted) bytes, \(String(format: "%.1f", Double(wasted) / 1_048_576)) MiB beyond the file)")
        #expect(sent >= size)
        #expect(
            wasted < Self.allowedWastePerKill * kills,
            "nginx sent \(sent) bytes for a \(size)-byte file over \(entries.count) requests (\(wasted) wasted)")
        // Several requests were closed ranges: the download really was segmented.
        #expect(
            entries.filter { ($0.range ?? "").range(of: #"^bytes=\d+-\d+$"#, options: .regularExpression) != nil }.count >= 3,
            "ranges: \(entries.map { $0.range ?? "-" })")
    }

    @Test(.timeLimit(.minutes(1)))
    func jsonProgressCarriesSegments() throws {
        // GIVEN nginx serving a 64 MiB file at 20 MiB/s per connection
        let root = try TemporaryDirectory(prefix: "haul-cli-seg")
        let size = 64 << 20
        try TestData.writeFile(at: root.file("json.bin"), size: size, seed: 52)
        let expected = try TestData.sha256(ofFile: root.file("json.bin"))
        let nginx = try NginxServer(documentRoot: root.path, limitRate: "20m")
        let work = try TemporaryDirectory(prefix: "haul-cli-seg-out")
        let output = work.file("json.bin")

        // WHEN haul downloads it over four connections with --json
        let result = try HaulBinary.run(["--json", "-x", "4", "-o", output, nginx.baseURL + "/limited/json.bin"], timeout: 60)

        // THEN it succeeds with the exact file
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(try TestData.sha256(ofFile: output) == expected)
        // AND progress lines carry a "segments" array of {begin, next, end}
        let objects = JSONLines.parse(result.stdoutString)
        let progress = objects.filter { ($0["event"] as? String) == "progress" }
        let withSegments = progress.compactMap { $0["segments"] as? [[String: Any]] }
        #expect(!withSegments.isEmpty, "events: \(JSONLines.events(objects))")
        #expect(withSegments.contains { $0.count >= 3 }, "segment counts: \(withSegments.map(\.count))")
        for segment in withSegments.joined() {
            let begin = (segment["begin"] as? NSNumber)?.int64Value
            let next = (segment["next"] as? NSNumber)?.int64Value
            let end = (segment["end"] as? NSNumber)?.int64Value
            #expect(begin != nil && next != nil && end != nil, "segment: \(segment)")
            if let begin, let next, let end {
                #expect(begin <= next && next <= end && end <= Int64(size), "segment: \(segment)")
            }
        }
    }
}
