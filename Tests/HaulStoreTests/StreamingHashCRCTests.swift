import HaulChecksum
import HaulCore
import Testing

/// The two CRCs cloud storage publishes, computed as bytes arrive and saved with a checkpoint like
/// the digests libcrypto computes.
@Suite("CRC-32C and CRC-64/NVME streaming")
struct StreamingHashCRCTests {
    static func digest(_ algorithm: ChecksumAlgorithm, _ text: String, splitAt split: Int? = nil) -> String {
        let bytes = Array(text.utf8)
        let hash = StreamingHash(algorithm)
        let cut = split ?? bytes.count
        bytes[..<cut].withUnsafeBytes { hash.update($0) }
        bytes[cut...].withUnsafeBytes { hash.update($0) }
        return hash.finalizeHex()
    }

    @Test func theCheckValuesOfBothCRCs() {
        // The catalogue's check values: the CRC of "123456789".
        #expect(Self.digest(.crc32c, "123456789") == "e3069283")
        #expect(Self.digest(.crc64nvme, "123456789") == "ae8b14860a799888")
        #expect(Self.digest(.crc32c, "") == "00000000")
        // Fed in pieces, the same
        #expect(Self.digest(.crc32c, "123456789", splitAt: 4) == "e3069283")
        #expect(Self.digest(.crc64nvme, "123456789", splitAt: 7) == "ae8b14860a799888")
    }

    @Test func aSavedStateContinuesInALaterRun() throws {
        for algorithm in [ChecksumAlgorithm.crc32c, .crc64nvme] {
            let first = StreamingHash(algorithm)
            Array("12345".utf8).withUnsafeBytes { first.update($0) }
            let saved = first.save()
            let restored = try #require(StreamingHash(restoring: saved))
            Array("6789".utf8).withUnsafeBytes { restored.update($0) }
            #expect(restored.finalizeHex() == Self.digest(algorithm, "123456789"))
        }
    }
}
