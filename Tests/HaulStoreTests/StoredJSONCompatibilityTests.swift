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

    /// The `options` column as the build before `DownloadOptions` (e2e2627) wrote it, through
    /// HaulJSON, for a request with every option set to something other than its default:
    /// `StoredOptions` then had a field per option and `QueuedRequest` copied them one by one.
    static let writtenByTheFieldByFieldBuild =
        #"{"allowsHTTPRedirect":true,"bytesPerSecond":1048576,"caFile":"/etc/ssl/extra.pem","checksum":"sha256=\#(String(repeating: "ab", count: 32))","#
        + #""connections":4,"cookieFile":"/home/u/c.txt","cookieJar":"/home/u/jar.txt","http2":true,"maxRedirects":3,"maxSize":2147483648,"#
        + #""minFreeSpace":0,"mirrors":["https://m1.test/f.bin"],"mirrorsUnverified":true,"netrcFile":"/home/u/.netrc","noProxy":"local.test","#
        + #""proxy":"http://proxy.test:3128","s3Checksums":true,"serverDigest":false,"verifyTLS":false}"#

    @Test(
        "GIVEN a row written by the build before DownloadOptions, every option set WHEN read THEN each option is the request's, and it is written back as the same text"
    )
    func aRowOfTheFieldByFieldBuildReadsWhole() throws {
        let options = try StoredOptions.decode(Self.writtenByTheFieldByFieldBuild, id: 1)

        #expect(options.checksum == Checksum(algorithm: .sha256, expectedHex: String(repeating: "ab", count: 32)))
        #expect(options.minFreeSpace == 0 && options.maxSize == 2_147_483_648)
        #expect(!options.verifiesServerDigest && options.asksS3Checksum)
        #expect(options.connections == 4 && options.bytesPerSecond == 1_048_576)
        #expect(options.allowsHTTPRedirect && options.maxRedirects == 3)
        #expect(options.cookieFile == "/home/u/c.txt" && options.cookieJar == "/home/u/jar.txt")
        #expect(options.mirrors == [URL(string: "https://m1.test/f.bin")] && options.allowsUnverifiedMirrors)
        #expect(!options.transfer.verifyTLS && options.transfer.caFile == "/etc/ssl/extra.pem" && options.transfer.allowsHTTP2)
        #expect(options.transfer.proxy == "http://proxy.test:3128" && options.transfer.noProxy == "local.test")
        #expect(options.transfer.netrcFile == "/home/u/.netrc")
        #expect(!options.usesRemoteTime)
        #expect(try StoredOptions.decode(try options.encoded(), id: 1) == options)
        #expect(try options.encoded() == Self.writtenByTheFieldByFieldBuild)
    }

    @Test("GIVEN the defaults as the build before DownloadOptions wrote them WHEN read THEN the defaults, written as none")
    func defaultsOfTheFieldByFieldBuildRead() throws {
        let options = try StoredOptions.decode(#"{"allowsHTTPRedirect":false,"maxRedirects":10,"verifyTLS":true}"#, id: 1)

        #expect(options == StoredOptions())
        #expect(try options.encoded() == "{}")
    }

    @Test("GIVEN usesRemoteTime WHEN written THEN under its key remoteTime, read back whole; a row without it reads as off")
    func remoteTimeIsStoredUnderItsKey() throws {
        var options = StoredOptions()
        options.usesRemoteTime = true
        options.connections = 2

        let text = try options.encoded()

        #expect(text == #"{"connections":2,"remoteTime":true}"#)
        #expect(try StoredOptions.decode(text, id: 1) == options)
        #expect(try StoredOptions.decode(#"{"connections":2}"#, id: 1).usesRemoteTime == false)
    }
}
