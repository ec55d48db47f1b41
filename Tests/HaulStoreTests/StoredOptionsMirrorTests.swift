import Foundation
import HaulStore
import Testing

@Suite("StoredOptions: mirrors")
struct StoredOptionsMirrorTests {
    @Test func mirrorsAreKeptAndTheirPasswordsGoWithTheOtherSecrets() throws {
        // GIVEN options with two mirrors, one with a password
        var options = StoredOptions()
        options.mirrors = try ["http://bob:mirror-secret@127.0.0.2:8080/f.bin", "http://127.0.0.3/f.bin"].map { try #require(URL(string: $0)) }

        // WHEN they are stored and read back, and when the download can no longer run
        let decoded = try StoredOptions.decode(try options.encoded(), id: 1)
        let scrubbed = try options.withoutSecrets.encoded()

        // THEN the mirrors come back as given, and the scrubbed options keep them without the password
        #expect(decoded.mirrors == options.mirrors)
        #expect(!scrubbed.contains("mirror-secret"))
        #expect(options.withoutSecrets.mirrors.map(\.absoluteString) == ["http://bob@127.0.0.2:8080/f.bin", "http://127.0.0.3/f.bin"])
    }

    @Test func optionsStoredBeforeMirrorsReadAsNone() throws {
        // GIVEN the options column of a row added before mirrors existed
        let old = #"{"connections":4,"proxy":"socks5h://proxy:1080"}"#

        // WHEN it is read
        let options = try StoredOptions.decode(old, id: 7)

        // THEN it has no mirrors and everything else it had
        #expect(options.mirrors.isEmpty)
        #expect(options.connections == 4)
    }
}
