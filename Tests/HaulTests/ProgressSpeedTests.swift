import Foundation
import HaulCore
import HaulTestSupport
import Testing

@testable import Haul

/// Every progress event that reports bytes reports a speed measured over what has arrived.
@Suite("progress speed from the first report on")
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

        // THEN its first report, and every one with bytes, carries a speed (the first had 0 before)
        let reports = Self.speeds(of: watched.events).filter { $0.bytes > 0 }
        #expect(!reports.isEmpty)
        #expect(reports.allSatisfy { $0.speed > 0 }, "\(reports)")
        if slow, let first = reports.first {
            // measured over what arrived: about 1 MiB/s, not a guess
            #expect(first.speed > 300_000 && first.speed < 3_000_000, "\(first)")
        }
    }
}
