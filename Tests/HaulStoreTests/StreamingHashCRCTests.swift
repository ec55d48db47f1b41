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

    /// The CRCs bit by bit, without a table: the definition the table-driven code must agree with.
    static func bitwise<Value: FixedWidthInteger & UnsignedInteger>(_ bytes: [UInt8], polynomial: Value) -> Value {
        var value = ~Value(0)
        for byte in bytes {
            value ^= Value(byte)
            for _ in 0..<8 { value = value & 1 == 1 ? (value >> 1) ^ polynomial : value >> 1 }
        }
        return ~value
    }

    static func hex<Value: FixedWidthInteger>(_ value: Value) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: Value.bitWidth / 4 - digits.count) + digits
    }

    @Test("GIVEN every byte value, in pieces of every size WHEN both CRCs are computed THEN they match the bitwise definition")
    func tableMatchesTheBitwiseDefinition() {
        let bytes = (0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 167 &+ $0 >> 8) }
        let expected32 = Self.hex(Self.bitwise(bytes, polynomial: UInt32(0x82F6_3B78)))
        let expected64 = Self.hex(Self.bitwise(bytes, polynomial: UInt64(0x9A6C_9329_AC4B_C9B5)))
        for piece in [1, 7, 64, 1000, 3000] {
            let crc32 = StreamingHash(.crc32c)
            let crc64 = StreamingHash(.crc64nvme)
            for start in stride(from: 0, to: bytes.count, by: piece) {
                bytes[start..<min(start + piece, bytes.count)].withUnsafeBytes {
                    crc32.update($0)
                    crc64.update($0)
                }
            }
            #expect(crc32.finalizeHex() == expected32, "pieces of \(piece)")
            #expect(crc64.finalizeHex() == expected64, "pieces of \(piece)")
        }
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
