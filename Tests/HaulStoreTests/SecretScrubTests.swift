import Foundation
import HaulCore
import Testing

@testable import HaulStore

/// A resume record whose URLs carry a password, and which names its partial's inode.
private func recordWithPasswords() throws -> String {
    var identity = stat()
    identity.st_ino = 4242
    var record = ResumeRecord(originalURL: "http://alice:hunter2@example.com/a.bin", finalURL: "http://bob:pw2@cdn.example.com/a.bin")
    record.partialIdentity = FileIdentity(identity)
    return try ResumeRecordCodec.encode(record)
}

@Suite("SecretScrub: what a settled download keeps")
struct SecretScrubTests {
    @Test(
        "GIVEN a download with headers, a body, passwords in its URL, proxy and record WHEN it is scrubbed THEN none is kept, and the record still names its partial"
    )
    func everySecretGoes() throws {
        var options = StoredOptions()
        options.proxy = "http://p:proxy-pw@proxy.example:3128"
        options.connections = 2
        let item = try StoredDownload(
            row: downloadRow([
                "headers": #"[["X-Api-Key","k1"],["Accept","*/*"]]"#, "body": .blob(Array("pw=1".utf8)),
                "options": .text(try options.encoded()), "record": .text(try recordWithPasswords()),
            ]))

        let scrub = SecretScrub(item)

        #expect(scrub.removesSomething)
        #expect(scrub.url == "http://alice@example.com/a.bin")
        #expect(scrub.options?.proxy == "http://p@proxy.example:3128")
        #expect(scrub.options?.connections == 2)
        #expect(scrub.record?.originalURL == "http://alice@example.com/a.bin")
        #expect(scrub.record?.finalURL == "http://bob@cdn.example.com/a.bin")
        #expect(scrub.record?.partialIdentity?.inode == 4242)
    }

    @Test("GIVEN a download with nothing secret WHEN it is scrubbed THEN nothing is to be removed (the row is not rewritten, the log not truncated)")
    func nothingSecretRemovesNothing() throws {
        let item = try StoredDownload(row: downloadRow(["url": "http://example.com/a.bin", "headers": "[]", "options": "{}"]))

        let scrub = SecretScrub(item)

        #expect(!scrub.removesSomething)
        #expect(scrub.url == "http://example.com/a.bin")
    }

    @Test(
        "GIVEN a completed download whose record (cleared by the settlement) is the only place with a password WHEN scrubbed dropping the record THEN it counts as removing something, unread; without a password it does not"
    )
    func aDroppedRecordIsNotRead() throws {
        let withPassword = try StoredDownload(
            row: downloadRow(["url": "http://example.com/a.bin", "headers": "[]", "options": "{}", "record": .text(try recordWithPasswords())]))
        let plain = try StoredDownload(
            row: downloadRow([
                "url": "http://example.com/a.bin", "headers": "[]", "options": "{}",
                "record": .text(
                    try ResumeRecordCodec.encode(ResumeRecord(originalURL: "http://example.com/a.bin", finalURL: "http://example.com/a.bin"))),
            ]))
        // Damaged text is not read either: it goes with the record.
        let damaged = try StoredDownload(row: downloadRow(["url": "http://example.com/a.bin", "headers": "[]", "options": "{}", "record": "{not a record"]))

        #expect(SecretScrub(withPassword, droppingRecord: true).removesSomething)
        #expect(SecretScrub(withPassword, droppingRecord: true).record == nil)
        #expect(!SecretScrub(plain, droppingRecord: true).removesSomething)
        #expect(!SecretScrub(damaged, droppingRecord: true).removesSomething)
        // Kept records are still read and scrubbed.
        #expect(SecretScrub(plain).record?.originalURL == "http://example.com/a.bin")
    }

    @Test("GIVEN a header only (no password anywhere) WHEN it is scrubbed THEN it is removed: every header the user gave goes")
    func anyHeaderIsASecret() throws {
        let item = try StoredDownload(row: downloadRow(["url": "http://example.com/a.bin", "headers": #"[["X-Tenant","t1"]]"#, "options": .null]))

        #expect(SecretScrub(item).removesSomething)
    }

    @Test("GIVEN damaged options, an unreadable URL and a damaged record WHEN scrubbed THEN the options and record go and the URL column is left as it is")
    func damagedColumns() throws {
        let item = try StoredDownload(
            row: downloadRow(["options": "{damaged", "url": .blob([1]), "headers": "[]", "record": "{not a record"]))

        let scrub = SecretScrub(item)

        #expect(scrub.removesSomething)
        #expect(scrub.options == nil)
        #expect(scrub.url == nil)
        #expect(scrub.record == nil)
    }

    @Test(
        "GIVEN a record of a version this Haul does not know, with a password in its URL WHEN scrubbed THEN it is unreadable as every load finds it, and it goes"
    )
    func recordOfAnUnknownVersionGoes() throws {
        var record = ResumeRecord(originalURL: "http://alice:hunter2@example.com/a.bin", finalURL: "http://alice:hunter2@example.com/a.bin")
        record.version = ResumeRecord.currentVersion + 1
        let item = try StoredDownload(
            row: downloadRow([
                "url": "http://example.com/a.bin", "headers": "[]", "options": .null, "record": .text(try ResumeRecordCodec.encode(record)),
            ]))

        let scrub = SecretScrub(item)

        #expect(scrub.removesSomething)
        #expect(scrub.record == nil)
    }
}
