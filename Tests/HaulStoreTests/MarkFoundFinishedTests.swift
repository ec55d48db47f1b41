import CHaulSystem
import Foundation
import HaulTestSupport
import Synchronization
import Testing

@testable import HaulStore

/// A record kept as a run killed before forgetting it keeps it: `remove` forgets nothing.
private final class KeptRecord: ResumeRecordStore {
    private let saved = Mutex<ResumeRecord?>(nil)
    func load() throws(StoreError) -> ResumeRecord? { saved.withLock { $0 } }
    func save(_ record: ResumeRecord) throws(StoreError) { saved.withLock { $0 = record } }
    func remove() {}
}

/// A file found finished by its record alone (a run killed after its rename, before its mark) is
/// marked by the run that takes it: only if it is still, at the mark, the file its rename left.
@Suite("Mark once: a file found by its record, marked")
struct MarkFoundFinishedTests {
    @Test(
        """
        GIVEN a file found complete by its record alone (no mark) WHEN another process writes into it in place and puts \
        its modification time back before the run that took it marks it THEN no mark proves the changed bytes
        """)
    func aFileChangedBetweenItsTakingAndItsMarkIsNotMarked() throws {
        let directory = try TemporaryDirectory(prefix: "haul-mark-found")
        let url = try #require(URL(string: "http://127.0.0.1:1/f.bin"))
        let request = PartialDownload.Request(
            destination: .file(directory.file("f.bin")), existingFile: .refuse, url: url,
            fresh: ResumeRecord(originalURL: url.absoluteString, finalURL: url.absoluteString))
        let store = KeptRecord()
        let first = try PartialDownload.open(request, records: { _ in store })
        try Array(repeating: UInt8(7), count: 4096).withUnsafeBytes { try first.sink.append($0) }
        let final = try first.finish(replacing: false, hash: nil)
        // GIVEN the state of a run killed after the rename, before the mark: the record says
        // finished, the file has no mark
        let fd = open(final, O_RDWR)
        try #require(fd >= 0)
        defer { close(fd) }
        try #require(FinishedMark.finishedRequest(at: final) != nil, "the first run marked nothing: the file system keeps no attributes")
        #expect(haul_remove_file_attribute(fd, FinishedMark.attributeName) == 0)
        let second = try PartialDownload.open(request, records: { _ in store })
        try #require(second.alreadyInPlace)
        // WHEN another process writes into it in place and puts its modification time back
        var before = stat()
        #expect(fstat(fd, &before) == 0)
        #expect(pwrite(fd, "planted", 7, 0) == 7)
        var times = [before.st_atim, before.st_mtim]
        #expect(futimens(fd, &times) == 0)
        // and the run that took it finishes
        _ = try? second.finish(replacing: false, hash: nil)
        // THEN no mark says it is the finished download
        #expect(FinishedMark.finishedRequest(at: final) == nil)
    }
}
