/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), a checksum S3 and Google Cloud Storage
/// publish. Not libcrypto's, so it is Swift on every platform: table-driven, a byte at a time, as
/// fast as the C it replaced in a release build (about 450 MB/s per core either way).
///
/// The running value is kept un-inverted (0 before any byte): the whole state is that one value,
/// and the final CRC is the state itself.
enum CRC32C {
    private static let table = reflectedCRCTable(polynomial: UInt32(0x82F6_3B78))

    /// The running value after `crc` has taken in `bytes`.
    static func update(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        table.withUnsafeBufferPointer { table in
            var value = ~crc
            for byte in bytes {
                value = table[Int(UInt8(truncatingIfNeeded: value) ^ byte)] ^ (value >> 8)
            }
            return ~value
        }
    }
}

/// CRC-64/NVME (reflected polynomial 0x9A6C9329AC4BC9B5), the checksum S3 publishes as
/// `x-amz-checksum-crc64nvme`. Kept like `CRC32C`: the state is the un-inverted running value.
enum CRC64NVME {
    private static let table = reflectedCRCTable(polynomial: UInt64(0x9A6C_9329_AC4B_C9B5))

    /// The running value after `crc` has taken in `bytes`.
    static func update(_ crc: UInt64, _ bytes: UnsafeRawBufferPointer) -> UInt64 {
        table.withUnsafeBufferPointer { table in
            var value = ~crc
            for byte in bytes {
                value = table[Int(UInt8(truncatingIfNeeded: value) ^ byte)] ^ (value >> 8)
            }
            return ~value
        }
    }
}

/// The 256 entries of a reflected CRC's byte table: entry n is the CRC register after shifting
/// the byte n through it.
private func reflectedCRCTable<Value: FixedWidthInteger & UnsignedInteger>(polynomial: Value) -> [Value] {
    (0..<256).map { index in
        var value = Value(index)
        for _ in 0..<8 {
            value = value & 1 == 1 ? (value >> 1) ^ polynomial : value >> 1
        }
        return value
    }
}
