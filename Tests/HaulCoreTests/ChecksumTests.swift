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
}
