import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A download's figures move at the promised interval whoever writes, with several connections
/// under a speed limit: in `haul --json`'s events and in `tellStatus` through `haul serve`, with a
/// limit changed while it runs (issue 36, item 1).
@Suite("haul progress under a limit over several connections", .serialized)
struct CLILimitedProgressTests {
    /// The `progress` objects of `--json` output, in order.
    static func progressLines(_ stdout: String) -> [[String: Any]] {
        stdout.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                object["event"] as? String == "progress"
            else { return nil }
            return object
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func jsonEventsComeEveryQuarterSecondWithEightConnectionsUnderALimit() throws {
        // GIVEN nginx serving a 64 MiB file as fast as loopback allows
        let work = try TemporaryDirectory(prefix: "haul-cli-limited")
        let nginx = try ServedFiles.start(in: work, [("big.bin", 64 << 20, 361)], limitRate: "1m")
        let output = work.file("x.bin")

        // WHEN haul fetches it over 8 connections at 512 KiB/s for 4 s, then is interrupted
        let running = try RunningHaul(["--json", "-x", "8", "--limit-rate", "512k", "-o", output, nginx.baseURL + "/big.bin"])
        Thread.sleep(forTimeInterval: 4)
        running.send(SIGINT)
        _ = try running.wait(timeout: 20)

        // THEN a progress event came about every 0.25 s (not only when the first connection wrote)
        let reports = Self.progressLines(running.stdout)
        #expect(reports.count >= 10, "\(reports.count) progress events in 4 s; stdout: \(running.stdout.prefix(2000))")
        // AND they are the whole download's figures: growing bytes, about 2 MiB in 4 s
        let bytes = reports.compactMap { ($0["bytes"] as? NSNumber)?.int64Value }
        #expect(bytes == bytes.sorted(), "\(bytes)")
        #expect((bytes.last ?? 0) > 1 << 20, "\(bytes)")
        #expect((bytes.last ?? 0) < 4 << 20, "\(bytes)")
    }

    @Test(.timeLimit(.minutes(1)))
    func tellStatusMovesAfterTheLimitChangesOnEightConnections() throws {
        // GIVEN haul serve fetching a 64 MiB file from nginx over 8 connections
        let work = try TemporaryDirectory(prefix: "haul-serve-limited")
        let nginx = try ServedFiles.start(in: work, [("big.bin", 64 << 20, 362)], limitRate: "1m")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("out"))
        defer { _ = try? serve.stop() }
        let gid = try #require(
            try serve.result(
                "aria2.addUri", [[nginx.baseURL + "/big.bin"], ["split": "8", "max-connection-per-server": "8", "max-download-limit": "1048576"]])
                as? String)

        // WHEN the limit is lowered to 256 KiB/s, then raised to 512 KiB/s, while tellStatus is read twice a second
        var seen: [(at: Double, completed: Int64, speed: Int64)] = []
        let started = Date()
        func look() throws {
            let status = try #require(try serve.result("aria2.tellStatus", [gid]) as? [String: Any])
            seen.append(
                (
                    Date().timeIntervalSince(started), Int64(status["completedLength"] as? String ?? "") ?? -1,
                    Int64(status["downloadSpeed"] as? String ?? "") ?? -1
                ))
        }
        Thread.sleep(forTimeInterval: 1)
        _ = try serve.result("aria2.changeOption", [gid, ["max-download-limit": "262144"]])
        for _ in 0..<8 {
            Thread.sleep(forTimeInterval: 0.5)
            try look()
        }
        _ = try serve.result("aria2.changeOption", [gid, ["max-download-limit": "524288"]])
        for _ in 0..<8 {
            Thread.sleep(forTimeInterval: 0.5)
            try look()
        }
        _ = try serve.result("aria2.remove", [gid])

        // THEN completedLength moved within every second, under either limit
        let described = seen.map { "\(String(format: "%.1f", $0.at)): \($0.completed) @ \($0.speed)" }.joined(separator: ", ")
        for index in 2..<seen.count {
            #expect(seen[index].completed > seen[index - 2].completed, "tellStatus stood still: \(described)")
        }
        // AND the speed it shows follows the limit: about 256 KiB/s at the end of the first part,
        // about 512 KiB/s at the end of the second
        let lowered = seen[7].speed
        let raised = seen[15].speed
        #expect(lowered > 128 << 10 && lowered < 400 << 10, "\(described)")
        #expect(raised > 360 << 10 && raised < 700 << 10, "\(described)")
    }
}

/// `tellStatus`'s `connections` counts the connections fetching, not the ranges of the file
/// (issue 36, item 10).
@Suite("haul serve's connection count", .serialized)
struct CLIConnectionCountTests {
    @Test(.timeLimit(.minutes(1)))
    func refusedConnectionsAreNotCounted() throws {
        // GIVEN a server at 1 MiB/s per connection that refuses the 3 extra connections of a
        // 4-connection download with 503
        let server = try FaultServer()
        defer { server.stop() }
        server.setResource("/f.bin", body: TestData.bytes(count: 8 << 20, seed: 3610))
        let throttle = Fault.throttle(bytesPerSecond: 1 << 20)
        server.enqueueFaults("/f.bin", [throttle, .status(503), .status(503), .status(503)])
        server.setPersistentFaults("/f.bin", [throttle])
        let work = try TemporaryDirectory(prefix: "haul-serve-connections")
        let serve = try ServeProcess(state: work.file("state"), directory: work.file("out"))
        defer { _ = try? serve.stop() }

        // WHEN it has run for a second
        let gid = try #require(try serve.result("aria2.addUri", [[server.url("/f.bin")], ["split": "4", "max-connection-per-server": "4"]]) as? String)
        Thread.sleep(forTimeInterval: 1.2)
        let status = try #require(try serve.result("aria2.tellStatus", [gid]) as? [String: Any])
        _ = try serve.result("aria2.remove", [gid])

        // THEN it counts the one connection that fetches
        let refused = server.requests.filter { $0.path == "/f.bin" }.count - 1
        #expect(refused == 3, "requests: \(server.requests.map { $0.header("Range") ?? "(whole)" })")
        #expect(status["connections"] as? String == "1", "\(status)")
    }
}
