import Foundation
import Testing

@testable import HaulCore

@Suite("Checksum: the --checksum value")
struct ChecksumTests {
    @Test func parsesEachAlgorithm() throws {
        let sha256 = try Checksum(parsing: "sha256=" + String(repeating: "A", count: 64))
        #expect(sha256.algorithm == .sha256)
        #expect(sha256.expectedHex == String(repeating: "a", count: 64))
        #expect(try Checksum(parsing: "SHA-512=" + String(repeating: "0", count: 128)).algorithm == .sha512)
        #expect(try Checksum(parsing: "sha1=" + String(repeating: "1", count: 40)).algorithm == .sha1)
        #expect(try Checksum(parsing: "md5=" + String(repeating: "f", count: 32)).algorithm == .md5)
    }

    @Test func refusesBadInput() {
        for bad in ["sha256", "sha256=abc", "crc32=00000000", "sha256=" + String(repeating: "g", count: 64), "=00", "md5=" + String(repeating: "0", count: 33)]
        {
            #expect(throws: ChecksumError.self) { try Checksum(parsing: bad) }
        }
    }

    @Test("GIVEN a checksum to verify and one only computed WHEN encoded THEN each is its text form, and it reads back the same")
    func codableAsItsTextForm() throws {
        let hex = String(repeating: "ab", count: 32)
        let verified = Checksum(algorithm: .sha256, expectedHex: hex.uppercased())
        let computed = Checksum(algorithm: .crc32c, expectedHex: nil)

        let json = try JSONEncoder().encode([verified, computed])

        #expect(String(decoding: json, as: UTF8.self) == #"["sha256=\#(hex)","crc32c"]"#)
        #expect(try JSONDecoder().decode([Checksum].self, from: json) == [verified, computed])
        #expect(verified.description == "sha256=" + hex)
    }

    @Test("GIVEN a text that is no checksum WHEN decoded THEN it is a decoding error, never a checksum")
    func unreadableTextIsADecodingError() {
        for bad in [#""sha256=abc""#, #""crc32""#, #""""#, "7"] {
            #expect(throws: DecodingError.self, "\(bad)") { try JSONDecoder().decode(Checksum.self, from: Data(bad.utf8)) }
        }
    }
}
