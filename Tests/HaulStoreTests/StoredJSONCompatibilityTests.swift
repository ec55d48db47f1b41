import Foundation
import HaulCore
import Testing

@testable import HaulStore

/// The queue's JSON columns (options, headers) are written by HaulJSON now, `/` unescaped; what
/// older versions wrote (`JSONEncoder` and `JSONSerialization`, `/` escaped as `\/`) reads the same.
@Suite("Stored JSON columns: this version's and older versions'")
struct StoredJSONCompatibilityTests {
    private static func options() -> StoredOptions {
        var options = StoredOptions()
        options.checksum = try? Checksum(parsing: "sha256=" + String(repeating: "ab", count: 32))
        options.maxSize = 1 << 40
        options.connections = 4
        options.verifyTLS = false
        options.caFile = "/etc/ssl/extra.pem"
        options.proxy = "http://proxy.test:3128/"
        options.mirrors = [URL(string: "https://m1.test/a.bin"), URL(string: "https://m2.test/x/a.bin?b=1")].compactMap(\.self)
        options.cookieJar = "/tmp/jar\u{08}\u{0C}"
        options.bytesPerSecond = 1_000_000
        return options
    }

    @Test("GIVEN options WHEN encoded THEN JSONEncoder's sorted-key text with slashes as they are, and it reads back whole")
    func optionsAreJSONEncodersTextWithoutEscapedSlashes() throws {
        let options = Self.options()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let text = try options.encoded()
        #expect(text == String(decoding: try encoder.encode(options), as: UTF8.self))
        #expect(text.contains(#""caFile":"/etc/ssl/extra.pem""#))
        #expect(try StoredOptions.decode(text, id: 1) == options)
    }

    @Test("GIVEN options as an older version wrote them (slashes escaped) WHEN read THEN the same options")
    func olderOptionsRead() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let older = String(decoding: try encoder.encode(Self.options()), as: UTF8.self)
        #expect(older.contains(#"\/etc\/ssl"#))
        #expect(try StoredOptions.decode(older, id: 1) == Self.options())
    }

    @Test("GIVEN headers WHEN written and read THEN the same fields; the older text (slashes escaped) reads the same")
    func headersOfEitherVersionRead() throws {
        let fields = [
            HTTPHeaders.Field(name: "Accept", value: "text/html, */*"), HTTPHeaders.Field(name: "X-Odd", value: "a\"b\\c\u{01}é😀"),
        ]
        let text = QueueStore.encodeHeaders(fields)
        #expect(text == #"[["Accept","text/html, */*"],["X-Odd","a\"b\\c\u0001é😀"]]"#)
        #expect(StoredDownload.decodeHeaders(text) == fields)
        let older = String(decoding: try JSONSerialization.data(withJSONObject: fields.map { [$0.name, $0.value] }), as: UTF8.self)
        #expect(older.contains(#"text\/html"#))
        #expect(StoredDownload.decodeHeaders(older) == fields)
        #expect(StoredDownload.decodeHeaders(#"[["a"]]"#) == nil)
        #expect(StoredDownload.decodeHeaders(#"{"a":"b"}"#) == nil)
    }
}
