import HaulCore

#if canImport(CCrypto)
    import CCrypto
#elseif canImport(CommonCrypto)
    import CHaulSystem
    import Darwin
#endif

/// Every way HaulChecksum differs between Linux and Apple platforms, in one place.
///
/// The digests are libcrypto's on Linux (`Sources/CCrypto/shim.h`) and CommonCrypto's on Apple
/// platforms (`Sources/CHaulSystem/include/haul_digest.h`): the same `haul_hash_*` C functions over
/// one `haul_hash_ctx` struct, which a checkpoint saves as bytes. Besides that header, two things
/// differ, both here: which build a saved state belongs to (its layout is that build's), and which
/// fields of a saved state the C code relies on, so that a damaged one is refused before it gets
/// there. The CRCs are Swift everywhere (`CRC.swift`).
enum DigestSeams {
    #if canImport(CCrypto)
        /// A state's layout belongs to one OpenSSL build: its version number.
        static var stateLayoutTag: UInt64 { UInt64(haul_openssl_version()) }

        /// libcrypto indexes its block buffer with `num` and trusts the bit count (`Nl`/`Nh`) and,
        /// for SHA-2, `md_len`; each must be what `bytes` bytes of input produce.
        static func checkFields(of state: haul_hash_ctx, _ algorithm: ChecksumAlgorithm, bytes: UInt64) throws(HashStateDefect) {
            switch algorithm {
            case .md5:
                let md5 = state.u.md5
                try check32(num: md5.num, low: md5.Nl, high: md5.Nh, bytes: bytes, blockSize: UInt64(MD5_CBLOCK))
            case .sha1:
                let sha1 = state.u.sha1
                try check32(num: sha1.num, low: sha1.Nl, high: sha1.Nh, bytes: bytes, blockSize: UInt64(SHA_CBLOCK))
            case .sha256:
                let sha256 = state.u.sha256
                try check32(num: sha256.num, low: sha256.Nl, high: sha256.Nh, bytes: bytes, blockSize: UInt64(SHA256_CBLOCK))
                guard sha256.md_len == UInt32(SHA256_DIGEST_LENGTH) else { throw .digestLength(sha256.md_len) }
            case .sha512:
                let sha512 = state.u.sha512
                guard UInt64(sha512.num) == bytes % UInt64(SHA512_CBLOCK) else { throw .blockOffset(UInt64(sha512.num)) }
                // A 128-bit bit count in two 64-bit words, as SHA512_Update keeps it.
                guard UInt64(sha512.Nl) == bytes &<< 3, UInt64(sha512.Nh) == bytes >> 61 else { throw .bitCount }
                guard sha512.md_len == UInt32(SHA512_DIGEST_LENGTH) else { throw .digestLength(sha512.md_len) }
            case .crc32c, .crc64nvme:
                // The state is the running value alone: any bits are a value, none drives memory.
                break
            }
        }

        /// The MD5/SHA-1/SHA-256 layout: `num` bytes buffered, and a 64-bit bit count in two 32-bit
        /// words, kept modulo 2^64 as the md32 update does.
        private static func check32(num: UInt32, low: UInt32, high: UInt32, bytes: UInt64, blockSize: UInt64) throws(HashStateDefect) {
            guard UInt64(num) == bytes % blockSize else { throw .blockOffset(UInt64(num)) }
            let bits = bytes &<< 3
            guard low == UInt32(truncatingIfNeeded: bits), high == UInt32(truncatingIfNeeded: bits >> 32) else { throw .bitCount }
        }
    #elseif canImport(CommonCrypto)
        /// CommonDigest.h calls the contexts' contents private to the implementation, so a state
        /// belongs to one OS build (`kern.osversion`, hashed with FNV-1a, which unlike `Hasher` is
        /// the same in every run); the top bit keeps the tag apart from OpenSSL version numbers.
        static let stateLayoutTag: UInt64 = {
            var build = [UInt8](repeating: 0, count: 64)
            var size = build.count
            guard sysctlbyname("kern.osversion", &build, &size, nil, 0) == 0 else { return 1 << 63 }
            let name = build.prefix { $0 != 0 }
            return name.reduce(UInt64(0xCBF2_9CE4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01B3 } | 1 << 63
        }()

        /// CommonCrypto's MD5 and SHA-1 hand `num` to corecrypto as the index into the block buffer
        /// and `Nl`/`Nh` as the bits of the blocks already compressed (the buffered bytes are
        /// counted at the end). Its SHA-256 and SHA-512 keep a 64-bit byte count at the start of
        /// `count` and index the buffer with it modulo the block, so only that count is checked.
        static func checkFields(of state: haul_hash_ctx, _ algorithm: ChecksumAlgorithm, bytes: UInt64) throws(HashStateDefect) {
            switch algorithm {
            case .md5:
                try checkBuffered(num: state.u.md5.num, low: state.u.md5.Nl, high: state.u.md5.Nh, bytes: bytes)
            case .sha1:
                try checkBuffered(num: state.u.sha1.num, low: state.u.sha1.Nl, high: state.u.sha1.Nh, bytes: bytes)
            case .sha256:
                let count = state.u.sha256.count
                guard UInt64(count.0) | UInt64(count.1) << 32 == bytes else { throw .bitCount }
            case .sha512:
                guard state.u.sha512.count.0 == bytes else { throw .bitCount }
            case .crc32c, .crc64nvme:
                break
            }
        }

        /// MD5 and SHA-1, both 64-byte blocks: `num` bytes buffered, `8 × (bytes − num)` bits counted.
        private static func checkBuffered(num: Int32, low: UInt32, high: UInt32, bytes: UInt64) throws(HashStateDefect) {
            guard num >= 0, UInt64(num) == bytes % 64 else { throw .blockOffset(UInt64(UInt32(bitPattern: num))) }
            let bits = (bytes - UInt64(num)) &<< 3
            guard low == UInt32(truncatingIfNeeded: bits), high == UInt32(truncatingIfNeeded: bits >> 32) else { throw .bitCount }
        }
    #else
        #error("HaulChecksum needs libcrypto (CCrypto, on Linux) or CommonCrypto (Apple platforms)")
    #endif
}
