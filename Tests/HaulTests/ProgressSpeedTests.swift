import Foundation
import HaulCore
import HaulTestSupport
import Testing

@testable import Haul

/// Every progress event that reports bytes after the first second, and the last one of a run
/// however short, reports a speed measured over what has arrived; none before (issue 36, item 2).
@Suite("progress speed once it means something")
struct ProgressSpeedTests {
    static func speeds(of events: [DownloadEvent]) -> [(bytes: Int64, speed: Double)] {
        events.compactMap { event in
            if case .progress(let progress) = event { return (progress.bytes, progress.bytesPerSecond) }
            return nil
        }
    }

    @Test(arguments: [false, true])
    func everyReportWithBytesHasASpeed(slow: Bool) async throws {
        // GIVEN a download reported once a second: slow (3 MiB at 1 MiB/s) or done in well under a second
        let server = try FaultServer()
        server.setResource(FaultHarness.path, body: TestData.bytes(count: 3 << 20, seed: 51))
        if slow { server.setPersistentFaults(FaultHarness.path, [.throttle(bytesPerSecond: 1 << 20)]) }
        let directory = try TemporaryDirectory()
        var request = try FaultHarness.request(server, to: .file(directory.file("f.bin")))
        request.progressInterval = 1
        request.connections = 1

        // WHEN it runs
        let watched = try await FaultHarness.run(request)
        #expect(watched.error == nil)

        // THEN every report a second or more into the body carries a speed, and so does the last
        // one (that of the end, over the whole run); one made sooner shows none rather than a guess
        let reports = Self.speeds(of: watched.events).filter { $0.bytes > 0 }
        let last = try #require(reports.last)
        #expect(last.speed > 0, "\(reports)")
        if slow {
            #expect(reports.count >= 3, "\(reports)")
            #expect(reports.dropFirst().allSatisfy { $0.speed > 0 }, "\(reports)")
            // measured over what arrived: about 1 MiB/s, not a guess
            let second = reports[1]
            #expect(second.speed > 300_000 && second.speed < 3_000_000, "\(second)")
        }
    }
}
