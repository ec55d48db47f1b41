import Foundation
import HaulTestSupport
import Synchronization
import Testing

@testable import Haul
@testable import HaulStore

/// A partial download of `bytes` into `directory/name`, its record in a file beside it.
private func completePartial(_ directory: TemporaryDirectory, _ name: String, _ bytes: [UInt8]) throws -> PartialDownload {
    let url = try #require(URL(string: "http://127.0.0.1:1/\(name)"))
    let request = PartialDownload.Request(
        destination: .file(directory.file(name)), existingFile: .refuse, url: url,
        fresh: ResumeRecord(originalURL: url.absoluteString, finalURL: url.absoluteString))
    let output = try PartialDownload.open(request, records: { RecordFile(path: $0.recordPath) })
    try bytes.withUnsafeBytes { try output.sink.append($0) }
    return output
}

/// A member handed to the group's task while the test waits for its outcome.
private struct Lent<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

@Suite("FinishGroups: finished files put in place together")
struct FinishGroupsTests {
    @Test("GIVEN a group being finished WHEN three more downloads finish meanwhile THEN they form the next group, and each gets its own outcome")
    func thoseThatFinishMeanwhileFormTheNextGroup() async throws {
        let directory = try TemporaryDirectory(prefix: "haul-finish-groups")
        let outputs = try (0..<4).map { try completePartial(directory, "f\($0).bin", [UInt8]($0..<10)) }
        let firstStarted = DispatchSemaphore(value: 0)
        let releaseFirst = DispatchSemaphore(value: 0)
        let sizes = Mutex<[Int]>([])
        let groups = FinishGroups(finishGroup: { members in
            let first = sizes.withLock { sizes in
                sizes.append(members.count)
                return sizes.count == 1
            }
            if first {
                firstStarted.signal()
                releaseFirst.wait()
            }
            return members.map { .success($0.output.layout?.partialPath ?? "") }
        })
        let members = outputs.map { Lent(FinishGroup.Member($0, replacing: false, hash: nil)) }

        async let first = groups.finish(members[0].value)
        await withCheckedContinuation { done in
            DispatchQueue.global().async {
                firstStarted.wait()
                done.resume()
            }
        }
        async let second = groups.finish(members[1].value)
        async let third = groups.finish(members[2].value)
        async let fourth = groups.finish(members[3].value)
        // Let the three join the waiting list before the first group ends.
        try await Task.sleep(for: .milliseconds(300))
        releaseFirst.signal()
        let results = await [first, second, third, fourth]

        for (index, result) in results.enumerated() {
            #expect((try? result.get()) == outputs[index].layout?.partialPath)
        }
        #expect(sizes.withLock { $0 } == [1, 3])
        let figures = groups.figures
        #expect(figures.groups == 2 && figures.members == 4 && figures.largest == 3)
    }

    @Test(
        "GIVEN three complete downloads in one group, one of whose names was taken meanwhile WHEN the group is finished THEN the other two are in place and that one stays in its partial, its record not marked finished"
    )
    func oneFailureEndsOnlyItsDownload() throws {
        let directory = try TemporaryDirectory(prefix: "haul-finish-group")
        let bodies = (0..<3).map { index in [UInt8](repeating: UInt8(index + 1), count: 5_000 + index) }
        let outputs = try bodies.indices.map { try completePartial(directory, "g\($0).bin", bodies[$0]) }
        try Data("someone else's".utf8).write(to: URL(fileURLWithPath: directory.file("g1.bin")))

        let results = FinishGroup.finish(outputs.map { FinishGroup.Member($0, replacing: false, hash: nil) })

        #expect((try? results[0].get()) == directory.file("g0.bin"))
        #expect((try? results[2].get()) == directory.file("g2.bin"))
        guard case .failure(let error) = results[1] else {
            Issue.record("g1.bin replaced a file that appeared meanwhile")
            return
        }
        #expect(error.kind == .destinationExists)
        #expect(FileManager.default.contents(atPath: directory.file("g0.bin")) == Data(bodies[0]))
        #expect(FileManager.default.contents(atPath: directory.file("g2.bin")) == Data(bodies[2]))
        #expect(FileManager.default.contents(atPath: directory.file("g1.bin")) == Data("someone else's".utf8))
        let kept = try #require(outputs[1].layout)
        #expect(FileManager.default.contents(atPath: kept.partialPath) == Data(bodies[1]))
        #expect(outputs[1].record.finishedLength == nil)
        // The two in place left no partial or record behind.
        for index in [0, 2] {
            let layout = try #require(outputs[index].layout)
            #expect(!FileManager.default.fileExists(atPath: layout.partialPath))
            #expect(!FileManager.default.fileExists(atPath: layout.recordPath))
        }
    }
}
