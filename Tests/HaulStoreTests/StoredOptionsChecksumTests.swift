import Foundation
import HaulCore
import Testing

@testable import HaulStore

@Suite("StoredOptions: the checksum, typed and stored as its text")
struct StoredOptionsChecksumTests {
    @Test("GIVEN the options column of a row already written WHEN read THEN its checksum is typed, and written again it is the same text")
    func rowsAlreadyWrittenReadAndWriteTheSameText() throws {
        let hex = String(repeating: "0f", count: 32)
        let old = #"{"checksum":"sha256=\#(hex)","connections":2}"#

        let options = try StoredOptions.decode(old, id: 3)

        #expect(options.checksum == Checksum(algorithm: .sha256, expectedHex: hex))
        #expect(try options.encoded() == old)
    }

    @Test("GIVEN a digest only to be computed WHEN stored and read back THEN it is the same checksum (its text is the algorithm alone)")
    func aComputedDigestRoundTrips() throws {
        var options = StoredOptions()
        options.checksum = Checksum(algorithm: .sha512, expectedHex: nil)

        let text = try options.encoded()

        #expect(text == #"{"checksum":"sha512"}"#)
        #expect(try StoredOptions.decode(text, id: 1).checksum == options.checksum)
    }

    @Test("GIVEN a stored checksum Haul cannot read WHEN the row is read THEN its options are damaged, and the account says where, never the text")
    func anUnreadableChecksumIsDamage() throws {
        let item = try StoredDownload(row: downloadRow(["options": #"{"checksum":"sha256=pw-secret","connections":2}"#]))

        #expect(item.damage?.columns.map(\.name) == ["options"])
        #expect(item.damage?.reason == "its stored options are damaged: it has a value Haul cannot read (at checksum)")
        #expect(item.options == nil)
    }

    @Test("GIVEN options read once WHEN the same text is read again THEN it decodes alike from what was kept; options with a password are never kept")
    func readTextsAreKeptWithoutSecrets() throws {
        let plain = #"{"connections":3,"maxRedirects":4}"#
        let secret = #"{"proxy":"http://user:pw-secret@127.0.0.1:9"}"#

        let first = try StoredOptions.decode(plain, id: 1)
        let again = try StoredOptions.decode(plain, id: 2)
        let withPassword = try StoredOptions.decode(secret, id: 3)

        #expect(first == again)
        #expect(again.connections == 3 && again.maxRedirects == 4)
        #expect(StoredOptions.keepsDecoded(plain))
        #expect(withPassword.proxy == "http://user:pw-secret@127.0.0.1:9")
        #expect(!StoredOptions.keepsDecoded(secret))
    }
}
