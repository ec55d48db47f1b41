import CCrypto
import HaulCore

/// Why a saved hash state cannot be restored. The caller then hashes the prefix from disk again.
public enum HashStateDefect: Error, Sendable, Equatable {
    /// The state was saved by another OpenSSL build, whose struct layout may differ.
    case otherOpenSSLBuild
    /// The blob is not exactly one `haul_hash_ctx`.
    case wrongSize(actual: Int, expected: Int)
    /// The blob holds the state of another algorithm than the record names.
    case wrongAlgorithm
    /// The byte count the state claims to cover is negative.
    case negativeLength
    /// `num` (bytes waiting in the partial block) is not `length` modulo the block size. libcrypto
    /// indexes its block buffer with it, so a large value writes far outside the context.
    case blockOffset(UInt64)
    /// The bit count (`Nl`/`Nh`) is not 8 × `length`: the state covers other bytes than claimed.
    case bitCount
    /// SHA-256/SHA-512 `md_len` is not the digest length of the algorithm (a SHA-224/384 state,
    /// or damage): the digest would be truncated or refused.
    case digestLength(UInt32)
}

extension SavedHashState {
    /// Checks every field of the saved context that libcrypto trusts, without calling into it.
    ///
    /// libcrypto does not validate a context it is handed: it assumes its own functions built it.
    /// A record on disk can be damaged or edited, so before a saved context goes back to C, the
    /// fields that drive memory accesses (`num`) and those that must agree with the recorded byte
    /// count (`Nl`/`Nh`, `md_len`) are checked against what `length` bytes of input would produce.
    /// The chaining values and buffered data can hold any bits, so they are not checked; a state
    /// that passes can at worst yield a wrong digest, which the comparison with the expected one
    /// catches.
    public func validate() throws(HashStateDefect) {
        guard openSSLVersion == UInt64(haul_openssl_version()) else { throw .otherOpenSSLBuild }
        let expectedSize = haul_hash_ctx_size()
        guard context.count == expectedSize else { throw .wrongSize(actual: context.count, expected: expectedSize) }
        guard length >= 0 else { throw .negativeLength }
        var state = haul_hash_ctx()
        withUnsafeMutableBytes(of: &state) { $0.copyBytes(from: context) }
        guard state.kind == StreamingHash.kind(algorithm) else { throw .wrongAlgorithm }
        let bytes = UInt64(length)
        switch algorithm {
        case .md5:
            let md5 = state.u.md5
            try Self.check32(num: md5.num, low: md5.Nl, high: md5.Nh, bytes: bytes, blockSize: UInt64(MD5_CBLOCK))
        case .sha1:
            let sha1 = state.u.sha1
            try Self.check32(num: sha1.num, low: sha1.Nl, high: sha1.Nh, bytes: bytes, blockSize: UInt64(SHA_CBLOCK))
        case .sha256:
            let sha256 = state.u.sha256
            try Self.check32(num: sha256.num, low: sha256.Nl, high: sha256.Nh, bytes: bytes, blockSize: UInt64(SHA256_CBLOCK))
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
}
