import Foundation
import HaulTestSupport
import Testing

@testable import HaulStore

/// A store that keeps nothing: the test is about the files.
private final class NoRecords: ResumeRecordStore {
    func load() throws(StoreError) -> ResumeRecord? { nil }
    func save(_ record: ResumeRecord) throws(StoreError) {}
    func remove() {}
}

/// Only the partial this run wrote is given the final name.
@Suite("PartialDownload: the partial known by its identity")
struct PartialIdentityTests {
    @Test("GIVEN a partial replaced at its path by another process WHEN the download finishes THEN nothing is moved into place")
    func aReplacedPartialIsNeverRenamed() throws {
        let directory = try TemporaryDirectory(prefix: "haul-partial-identity")
        let url = try #require(URL(string: "http://127.0.0.1:1/f.bin"))
        let request = PartialDownload.Request(
            destination: .file(directory.file("f.bin")), existingFile: .refuse, url: url,
            fresh: ResumeRecord(originalURL: url.absoluteString, finalURL: url.absoluteString))
        let output = try PartialDownload.open(request, records: { _ in NoRecords() })
        try Array(repeating: UInt8(7), count: 4096).withUnsafeBytes { try output.sink.append($0) }
        // GIVEN another file put at the partial's path (as a second writer that deleted it and started its own would)
        let partialPath = OutputLayout.file(directory.file("f.bin")).partialPath
        #expect(unlink(partialPath) == 0)
        try Data(repeating: 1, count: 100).write(to: URL(fileURLWithPath: partialPath))
        // WHEN this run finishes
        #expect(throws: OutputError.self) { _ = try output.finish(replacing: false, hash: nil) }
        // THEN the other file was not given the final name
        #expect(!FileManager.default.fileExists(atPath: directory.file("f.bin")))
        #expect(FileManager.default.contents(atPath: partialPath)?.count == 100)
    }

    @Test(
        """
        GIVEN a complete partial whose identity was read for its sync and its finished record WHEN another process writes \
        into it before its rename (the same file, its size and time moved) THEN it is not moved into place: the bytes \
        synced and recorded are not the file's any more
        """)
    func aPartialWrittenIntoAfterItsIdentityWasReadIsNeverRenamed() throws {
        let directory = try TemporaryDirectory(prefix: "haul-partial-identity")
        let url = try #require(URL(string: "http://127.0.0.1:1/f.bin"))
        let request = PartialDownload.Request(
            destination: .file(directory.file("f.bin")), existingFile: .refuse, url: url,
            fresh: ResumeRecord(originalURL: url.absoluteString, finalURL: url.absoluteString))
        let output = try PartialDownload.open(request, records: { _ in NoRecords() })
        try Array(repeating: UInt8(7), count: 4096).withUnsafeBytes { try output.sink.append($0) }
        let written = try #require(try output.partialFile?.identity())
        // GIVEN another process appends to the partial after its identity was read
        let partialPath = OutputLayout.file(directory.file("f.bin")).partialPath
        let other = try FileHandle(forWritingTo: URL(fileURLWithPath: partialPath))
        try other.seekToEnd()
        try other.write(contentsOf: Data("planted".utf8))
        try other.close()
        // WHEN the rename comes
        #expect(throws: OutputError.self) { try output.moveIntoPlace(replacing: false, hash: nil, written: written) }
        // THEN nothing has the final name, and the partial is left as it is
        #expect(!FileManager.default.fileExists(atPath: directory.file("f.bin")))
        #expect(FileManager.default.contents(atPath: partialPath)?.count == 4096 + 7)
    }
}
