import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A power cut, not only a `kill -9`: the process dies at a durability step and then whatever it
/// had not synced of the queue's database is lost (`PowerCut`: its write-ahead log cut back to
/// the last sync). The same command run again must finish every file.
@Suite("haul: what a power cut leaves", .serialized)
struct CLIPowerCutTests {
    enum Form: String, CaseIterable, Sendable {
        case batch
        case queueRun
    }

    @Test(.timeLimit(.minutes(2)), arguments: Form.allCases, ["after-rename:1", "after-rename:2", "after-directory-sync:1"])
    func aCompletionSurvivesAPowerCutAfterTheFileIsInPlace(_ form: Form, _ step: String) throws {
        // GIVEN three files served with ranges and an ETag
        let server = try FaultServer()
        let bodies = (0..<3).map { TestData.bytes(count: (1 << 19) + $0 * 1_001, seed: 900 + UInt64($0)) }
        let paths = (0..<3).map { "/p\($0).bin" }
        for (path, body) in zip(paths, bodies) { server.setResource(path, body: body) }
        let work = try TemporaryDirectory(prefix: "haul-power-cut")
        let state = work.file("state")
        let out = work.file("out")
        let arguments: [String]
        switch form {
        case .batch:
            arguments = ["-q", "--retry", "0", "--state", state, "-j", "2", "-d", out] + paths.map(server.url)
        case .queueRun:
            let added = try HaulBinary.run(["queue", "add", "--state", state, "-d", out] + paths.map(server.url))
            #expect(added.status == 0, "\(added.stderr)")
            arguments = ["queue", "run", "-q", "--retry", "0", "--state", state, "-j", "2"]
        }
        let cut = PowerCut(in: work)

        // WHEN the run dies at the step and the power goes with it
        let crashed = try HaulBinary.run(arguments, environment: try cut.environment().merging(["HAUL_TEST_CRASH_AT": step]) { $1 })
        #expect(crashed.status == 128 + SIGKILL, "\(form) \(step): the crash point was not reached (\(crashed.status), \(crashed.stderr))")
        let lost = try cut.apply(under: state)

        // THEN the same command finishes every file bit-exact
        let next = try HaulBinary.run(arguments)
        #expect(next.status == 0, "\(form) \(step) (lost \(lost)): \(next.stderr)")
        for (path, body) in zip(paths, bodies) {
            #expect(Disk.difference(out + path, body) == nil, "\(form) \(step): \(path)")
        }
    }
}
