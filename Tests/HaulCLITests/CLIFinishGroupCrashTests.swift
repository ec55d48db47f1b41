import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A batch of small files finishes in groups (`FinishGroup`: one data sync, one commit of the
/// finished marks, a rename each, one sync per directory). Killed at any step of any group (the
/// test-only `HAUL_TEST_CRASH_AT` switch, as `kill -9`), the same command run again completes
/// every file bit-exact, fetches no file again that was already complete on disk, and leaves
/// nothing behind; and no file is ever under its name without all of its bytes.
@Suite("haul finish groups: crash points")
struct CLIFinishGroupCrashTests {
    static let files = 16

    /// Each group step, at the first occurrence and at later ones (later groups, and renames in
    /// the middle of a group).
    static let steps: [String] = {
        var steps: [String] = []
        for point in ["after-data-sync", "after-record-save", "after-directory-sync"] {
            steps += [1, 2, 4].map { "\(point):\($0)" }
        }
        steps += [1, 2, 3, 5, 8, 13].map { "after-rename:\($0)" }
        steps += [1, 3].map { "before-record-remove:\($0)" }
        return steps
    }()

    @Test(.timeLimit(.minutes(1)), arguments: steps)
    func aBatchKilledInAGroupStepCompletes(_ step: String) throws {
        // GIVEN 16 files of a few KiB (fresh downloads write no record before their finished mark)
        let server = try FaultServer()
        let paths = (0..<Self.files).map { "/g\($0).bin" }
        let bodies = paths.indices.map { TestData.bytes(count: 3_000 + $0 * 97, seed: 900 + UInt64($0)) }
        for (path, body) in zip(paths, bodies) { server.setResource(path, body: body) }
        let work = try TemporaryDirectory(prefix: "haul-cli-group-crash")
        let out = work.file("out")
        let arguments = ["-q", "--retry", "0", "--state", work.file("state"), "-j", "8", "-d", out] + paths.map(server.url)

        // WHEN the batch is killed at the step
        let crashed = try HaulBinary.run(arguments, environment: ["HAUL_TEST_CRASH_AT": step])
        // A step of a later group is not reached by a run that formed fewer groups (how many
        // depends on timing): such a run must simply have completed.
        let laterGroup = !step.hasSuffix(":1") && !step.hasPrefix("after-rename") && !step.hasPrefix("before-record-remove")
        #expect(
            crashed.status == 128 + SIGKILL || (laterGroup && crashed.status == 0),
            "\(step): the crash point was not reached (status \(crashed.status), stderr: \(crashed.stderr))")
        // THEN every file under its name is complete
        var inPlace: Set<String> = []
        for (path, body) in zip(paths, bodies) where Disk.exists(out + path) {
            #expect(Disk.difference(out + path, body) == nil, "\(step): \(path) is named but not complete")
            inPlace.insert(path)
        }
        let sentBefore = paths.map(server.bodyBytesSent)

        // AND the same command completes every file bit-exact
        let next = try HaulBinary.run(arguments)
        #expect(next.status == 0, "\(step): stderr: \(next.stderr)")
        for (path, body) in zip(paths, bodies) {
            #expect(Disk.difference(out + path, body) == nil, "\(step): \(path)")
        }
        // AND no file complete on disk is fetched again: one in place is recognised, one whose
        // finished mark was committed before its rename is renamed
        for (index, path) in paths.enumerated() where inPlace.contains(path) {
            #expect(server.bodyBytesSent(path) == sentBefore[index], "\(step): \(path) was in place and was fetched again")
        }
        // AND a file whose finished mark was committed before it was renamed is not fetched again:
        // right after the first group's commit, that group's files are complete partials
        if step == "after-record-save:1" {
            let notFetchedAgain = paths.indices.filter { server.bodyBytesSent(paths[$0]) == sentBefore[$0] }
            #expect(notFetchedAgain.count > inPlace.count, "\(step): every file not in place was fetched again")
        }
        // AND nothing is left behind
        let names = (try? FileManager.default.contentsOfDirectory(atPath: out)) ?? []
        #expect(Set(names) == Set(paths.map { String($0.dropFirst()) }), "\(step): \(names.sorted())")
        let listing = try StoreFixture(directory: work.file("state")).items()
        #expect(listing.count(state: "completed") == Self.files, "\(step): \(listing.values)")
    }
}
