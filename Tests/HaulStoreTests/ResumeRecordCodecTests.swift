import Foundation
import HaulTestSupport
import Testing

@testable import HaulStore

/// One codec for the record file and the queue's record column: both refuse a record of a version
/// they do not know (the queue's copy used to skip the check).
@Suite("ResumeRecordCodec")
struct ResumeRecordCodecTests {
    @Test func aRecordOfAnotherVersionIsDamagedInTheFileAndInTheQueueAlike() throws {
        var record = ResumeRecord(originalURL: "http://h/f", finalURL: "http://h/f")
        record.version = ResumeRecord.currentVersion + 1
        let text = try ResumeRecordCodec.encode(record)

        let fromQueue = #expect(throws: StoreError.self) { try QueueStore.decodeRecord(text, id: 7) }
        #expect(fromQueue?.kind == .corruptRecord)
        #expect(fromQueue?.message == "the resume record of download 7 has an unknown version \(record.version)")

        let directory = try TemporaryDirectory()
        let path = directory.file("record")
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        let fromFile = #expect(throws: StoreError.self) { try RecordFile(path: path).load() }
        #expect(fromFile?.kind == .corruptRecord)
    }

    @Test func theCurrentVersionRoundTrips() throws {
        var record = ResumeRecord(originalURL: "http://h/f", finalURL: "http://h/g")
        record.syncedLength = 4096
        let text = try ResumeRecordCodec.encode(record)
        #expect(try QueueStore.decodeRecord(text, id: 1) == record)
    }
}
