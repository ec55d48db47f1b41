import Foundation
import HaulCore
import Testing

@testable import HaulStore

/// A row of `downloads` as the store writes it, with some columns replaced.
func downloadRow(_ changes: [String: StoreValue] = [:]) -> Row {
    var columns: [(String, StoreValue)] = [
        ("id", 7), ("url", "http://alice:pw@example.com/a.bin"), ("method", "GET"), ("headers", #"[["X-Api-Key","k1"]]"#),
        ("body", .null), ("destination_kind", "file"), ("destination", "/tmp/a.bin"), ("range_spec", .null),
        ("existing_policy", "refuse"), ("priority", 3), ("state", "queued"), ("bytes", 10), ("total_bytes", 100), ("speed", 0.0),
        ("final_path", .null), ("last_error", .null), ("error_category", .null), ("record", .null), ("lease_owner", .null),
        ("lease_expires", .null), ("created_at", 1.5), ("updated_at", 2.5), ("attempts", 1), ("options", #"{"connections":4}"#),
    ]
    for (index, column) in columns.enumerated() {
        if let value = changes[column.0] { columns[index].1 = value }
    }
    return Row(columnNames: columns.map(\.0), values: columns.map(\.1))
}

@Suite("StoredDownload: reading a row, damaged or not")
struct StoredDownloadRowTests {
    @Test("GIVEN a row as the store writes it WHEN it is read THEN every field comes back and nothing is damaged")
    func soundRowReadsWhole() throws {
        let item = try StoredDownload(row: downloadRow())

        #expect(item.damage == nil)
        #expect(item.placementIsReadable)
        #expect(item.url == "http://alice:pw@example.com/a.bin")
        #expect(item.headers == [HTTPHeaders.Field(name: "X-Api-Key", value: "k1")])
        #expect(item.state == .queued && item.priority == 3 && item.bytes == 10 && item.totalBytes == 100)
        #expect(item.options?.connections == 4)
    }

    @Test("GIVEN options that are not JSON WHEN the row is read THEN it reads, the options are named damaged and nothing else is")
    func damagedOptionsAreNamedAndTheRestKept() throws {
        let item = try StoredDownload(row: downloadRow(["options": "{damaged"]))

        #expect(item.damage?.columns.map(\.name) == ["options"])
        #expect(item.damage?.reason == "its stored options are damaged: it is not JSON")
        #expect(item.options == nil)
        #expect(item.placementIsReadable)
        #expect(item.state == .queued)
        #expect(item.url == "http://alice:pw@example.com/a.bin")
    }

    @Test("GIVEN options with a value of the wrong type WHEN the row is read THEN the damage says where, never the text (it may hold a password)")
    func wrongTypeInOptionsSaysWhere() throws {
        let item = try StoredDownload(row: downloadRow(["options": #"{"connections":"secret-pw"}"#]))

        let reason = try #require(item.damage?.reason)
        #expect(reason.contains("connections"), "\(reason)")
        #expect(!reason.contains("secret-pw"))
    }

    @Test("GIVEN an unknown state and a URL stored as a blob WHEN the row is read THEN both are named, the state reads failed and the placement is unreadable")
    func unreadableStateAndURL() throws {
        let item = try StoredDownload(row: downloadRow(["state": "bogus", "url": .blob([1, 2])]))

        #expect(item.damage?.columns.map(\.name) == ["url", "state"])
        #expect(item.damage?.reason.contains("its stored state is damaged") == true)
        #expect(item.damage?.reason.contains("its stored URL is damaged: it holds a blob value Haul cannot read") == true)
        #expect(item.state == .failed)
        #expect(!item.placementIsReadable)
    }

    @Test("GIVEN headers that are not pairs, a body stored as text and a NULL byte count WHEN the row is read THEN each is named, never replaced silently")
    func headersBodyAndBytes() throws {
        let item = try StoredDownload(row: downloadRow(["headers": #"[["only-a-name"]]"#, "body": "text", "bytes": .null]))

        #expect(item.damage?.columns.map(\.name) == ["headers", "body", "bytes"])
        #expect(item.damage?.reason.contains("its stored byte count is damaged: it is missing") == true)
        #expect(item.damage?.reason.contains("its stored headers are damaged") == true)
    }

    @Test("GIVEN a row without an id WHEN it is read THEN it is refused as a damaged store")
    func rowWithoutIDIsRefused() {
        #expect(throws: StoreError(.corruptStore, "a queue row has no id")) { try StoredDownload(row: downloadRow(["id": .null])) }
    }

    @Test("GIVEN the existing-file policies as rows already hold them WHEN read THEN each is its policy, and each policy is stored as that same text")
    func existingPoliciesKeepTheirStoredText() throws {
        let stored: [(String, ExistingFilePolicy)] = [("refuse", .refuse), ("overwrite", .overwrite), ("continue", .continueIt)]
        for (text, policy) in stored {
            let item = try StoredDownload(row: downloadRow(["existing_policy": .text(text)]))

            #expect(item.damage == nil)
            #expect(item.existingPolicy == policy)
            #expect(policy.rawValue == text)
        }
    }

    @Test(
        "GIVEN an existing-file policy Haul does not know WHEN the row is read THEN it is named damaged, the placement unreadable (its partial is not looked for)"
    )
    func unknownExistingPolicyIsDamage() throws {
        let item = try StoredDownload(row: downloadRow(["existing_policy": "replace"]))

        #expect(item.damage?.columns.map(\.name) == ["existing_policy"])
        #expect(item.damage?.reason == "its stored existing-file policy is damaged: it holds a text value Haul cannot read")
        #expect(!item.placementIsReadable)
    }
}
