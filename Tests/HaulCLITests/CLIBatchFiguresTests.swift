import Foundation
import HaulTestSupport
import Testing

/// A batch on a terminal: its speeds are measured over a window long enough to mean something,
/// and its per-download lines name their files (issue 36, item 2).
@Suite("haul batch figures on a terminal", .serialized)
struct CLIBatchFiguresTests {
    /// Every speed `… KiB/s` or `… MiB/s` shown, in bytes per second.
    static func speeds(in text: String) -> [Double] {
        let pattern = #"([0-9]+(?:\.[0-9]+)?) (B|KiB|MiB|GiB)/s"#
        guard let regex = try? NSRegularExpression(pattern: pattern) else { return [] }
        let range = NSRange(text.startIndex..., in: text)
        return regex.matches(in: text, range: range).compactMap { match in
            guard let number = Range(match.range(at: 1), in: text), let unit = Range(match.range(at: 2), in: text),
                let value = Double(text[number])
            else { return nil }
            let scales: [String: Double] = ["B": 1, "KiB": 1024, "MiB": 1_048_576, "GiB": 1_073_741_824]
            let scale = scales[String(text[unit])] ?? 1
            return value * scale
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aBatchFromASlowServerShowsNoAbsurdSpeedAndNamesItsFiles() throws {
        // GIVEN six 3 MiB files from nginx, which sends each at 1 MB/s (after a first second's
        // worth at once: each download lasts about 2 s, longer than the second a speed is
        // measured over; at 2 MiB, about 1 s, whether a speed showed before the end was luck)
        let work = try TemporaryDirectory(prefix: "haul-cli-batch-figures")
        let names = (1...6).map { "file\($0).bin" }
        let nginx = try ServedFiles.start(in: work, names.enumerated().map { ($1, 3 << 20, 3620 + UInt64($0)) }, limitRate: "1m")
        try names.map { nginx.baseURL + "/limited/" + $0 }.joined(separator: "\n").write(toFile: work.file("list"), atomically: true, encoding: .utf8)

        // WHEN haul fetches them three at a time on a terminal
        let command = [try HaulBinary.path(), "-i", work.file("list"), "-j", "3", "-d", work.file("out"), "--state", work.file("state")].joined(
            separator: " ")
        let result = try ProcessRunner.run("/usr/bin/script", ["-qfec", command, "/dev/null"], timeout: 40)
        let screen = result.stdoutString

        // THEN it finished, and no speed shown was beyond what three 1 MB/s connections can bring
        // over the meter's shortest span, one second, with the second's worth nginx sends at once
        // (its `limit_rate` with `sendfile` starts with a second's worth: each download's true
        // average over its first seconds is about 1.5 MB/s, the batch's 4.5); the defect showed
        // 492 MiB/s
        #expect(result.status == 0, "\(screen)")
        #expect(screen.contains("6 of 6 downloads complete"), "\(screen)")
        let shown = Self.speeds(in: screen)
        #expect(!shown.isEmpty, "\(screen)")
        #expect(shown.allSatisfy { $0 < 7_000_000 }, "speeds shown: \(shown.map { Int($0) })")
        // AND each download's line names its file
        let lines = screen.components(separatedBy: CharacterSet(charactersIn: "\r\n")).filter { $0.contains("  #") }
        #expect(!lines.isEmpty, "\(screen)")
        for line in lines {
            #expect(names.contains { line.contains($0) }, "a download's line without its file: \(line.debugDescription)")
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aBatchOfFilesShorterThanASecondStillShowsItsSpeed() throws {
        // GIVEN thirty 100 KB files, each sent at 400 KB/s (a quarter of a second each: no
        // download of its own lasts the second a speed is measured over)
        let server = try FaultServer()
        defer { server.stop() }
        let names = (1...30).map { "small\($0).bin" }
        for (index, name) in names.enumerated() {
            server.setResource("/" + name, body: TestData.bytes(count: 100_000, seed: 3630 + UInt64(index)))
            server.setPersistentFaults("/" + name, [.throttle(bytesPerSecond: 400_000)])
        }
        let work = try TemporaryDirectory(prefix: "haul-cli-batch-small-figures")
        try names.map { server.url("/" + $0) }.joined(separator: "\n").write(toFile: work.file("list"), atomically: true, encoding: .utf8)

        // WHEN haul fetches them two at a time on a terminal
        let command = [try HaulBinary.path(), "-i", work.file("list"), "-j", "2", "-d", work.file("out"), "--state", work.file("state")].joined(
            separator: " ")
        let result = try ProcessRunner.run("/usr/bin/script", ["-qfec", command, "/dev/null"], timeout: 40)
        let screen = result.stdoutString

        // THEN the batch's line shows a speed once a second has passed: the batch's own, measured
        // over its bytes, not a sum of its downloads' (none of which lasts long enough to have one)
        #expect(result.status == 0, "\(screen)")
        let batchLines = screen.components(separatedBy: CharacterSet(charactersIn: "\r\n")).filter { $0.contains(" files] ") }
        let withSpeed = batchLines.filter { !Self.speeds(in: $0).isEmpty }
        #expect(withSpeed.count >= 2, "batch lines: \(batchLines)")
        // AND it is what the batch moves, two downloads at 400 KB/s each (the old sum of the
        // downloads' closing speeds showed about one download's worth, 370-400 KB/s)
        #expect(Self.speeds(in: withSpeed.joined()).allSatisfy { $0 > 450_000 && $0 < 2_000_000 }, "\(withSpeed)")
    }
}
