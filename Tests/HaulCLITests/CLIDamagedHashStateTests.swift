import Foundation
import HaulTestSupport
import Testing

/// A resume record whose saved digest state was damaged (by a disk error, a bad edit, an attacker
/// who can write beside the download) must never reach libcrypto: haul re-hashes the prefix instead.
@Suite("haul damaged hash state")
struct CLIDamagedHashStateTests {
    /// Where SHA-256's `num` (bytes buffered in the current block) sits in the saved context:
    /// `haul_hash_ctx` is an int `kind`, then (8-aligned, for SHA512_CTX's 64-bit words) the union;
    /// in SHA256_CTX `num` follows h[8], Nl, Nh and data[16], all 32-bit. The test checks these
    /// assumptions against the saved state before relying on them.
    static let numOffset = 8 + 4 * (8 + 2 + 16)
    static let sha256Kind: UInt32 = 3

    @Test func corruptBlockOffsetIsRehashedInsteadOfCrashing() throws {
        // GIVEN a checksummed download cut after 700 001 bytes (not a multiple of the 64-byte block,
        // so the saved `num` is non-zero and recognisable), leaving a record with a hash state
        let server = try FaultServer()
        let body = TestData.bytes(count: 2_000_000, seed: 61)
        let cut = 700_001
        server.setResource("/sum.bin", body: body)
        server.enqueueFaults("/sum.bin", [.dropAfter(bytes: cut)])
        let directory = try TemporaryDirectory()
        let output = directory.file("sum.bin")
        let arguments = ["-q", "--retry", "0", "--checksum", "sha256=" + (try Self.sha256Hex(body)), "-o", output, server.url("/sum.bin")]
        let first = try HaulBinary.run(arguments)
        #expect(first.status == 3, "stderr: \(first.stderr)")

        // WHEN the saved state's `num` is set to 0x40000000, far past the block size
        let recordPath = output + ".haul-resume"
        var record = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: recordPath))) as? [String: Any])
        var state = try #require(record["hashState"] as? [String: Any], "the record has no hashState")
        var context = try #require((state["context"] as? [NSNumber])?.map(\.uint8Value))
        #expect((state["length"] as? NSNumber)?.intValue == cut)
        #expect(Self.uint32(context, at: 0) == Self.sha256Kind, "the saved context does not start with the SHA-256 kind")
        #expect(Self.uint32(context, at: Self.numOffset) == UInt32(cut % 64), "num is not where the test expects it")
        Self.setUInt32(&context, at: Self.numOffset, 0x4000_0000)
        state["context"] = context
        record["hashState"] = state
        try JSONSerialization.data(withJSONObject: record, options: [.sortedKeys]).write(to: URL(fileURLWithPath: recordPath))

        // AND haul runs again
        let second = try HaulBinary.run(arguments)

        // THEN it does not crash: it resumes, re-hashes the prefix from disk and verifies the file
        #expect(second.status == 0, "stderr: \(second.stderr)")
        #expect(Disk.difference(output, body) == nil)
        #expect(server.requests.last?.header("Range") == "bytes=\(cut)-")
    }

    static func uint32(_ bytes: [UInt8], at offset: Int) -> UInt32? {
        guard offset + 4 <= bytes.count else { return nil }
        return (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[offset + $1]) << (8 * $1) }
    }

    static func setUInt32(_ bytes: inout [UInt8], at offset: Int, _ value: UInt32) {
        guard offset + 4 <= bytes.count else { return }
        for index in 0..<4 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * index)) }
    }

    /// The expected digest, computed by the system's sha256sum so the test does not trust haul's own code.
    static func sha256Hex(_ bytes: [UInt8]) throws -> String {
        let directory = try TemporaryDirectory()
        let path = directory.file("body")
        try Disk.write(bytes, to: path)
        let result = try ProcessRunner.run("/usr/bin/sha256sum", [path], timeout: 30)
        return String(result.stdoutString.prefix(64))
    }
}
