import HaulCore

#if canImport(CCrypto)
    import CCrypto
#elseif canImport(CommonCrypto)
    import CHaulSystem
#endif

/// Why a saved hash state cannot be restored. The caller then hashes the prefix from disk again.
package enum HashStateDefect: Error, Sendable, Equatable {
    /// The state was saved by another OpenSSL build (on Apple platforms, another OS build), whose
    /// struct layout may differ.
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
    /// The count the state keeps of its input (libcrypto's bit count `Nl`/`Nh`, CommonCrypto's bit
    /// or byte count) does not match `length`: the state covers other bytes than claimed.
    case bitCount
    /// SHA-256/SHA-512 `md_len` is not the digest length of the algorithm (a SHA-224/384 state,
    /// or damage): the digest would be truncated or refused.
    case digestLength(UInt32)
}

extension SavedHashState {
    /// Checks every field of the saved context that the C digest code trusts, without calling into it.
    ///
    /// libcrypto (and CommonCrypto) do not validate a context they are handed: they assume their own
    /// functions built it. A record on disk can be damaged or edited, so before a saved context goes
    /// back to C, the fields that drive memory accesses (`num`) and those that must agree with the
    /// recorded byte count are checked against what `length` bytes of input would produce (which
    /// fields those are is the platform's: `DigestSeams.checkFields`). The chaining values and
    /// buffered data can hold any bits, so they are not checked; a state that passes can at worst
    /// yield a wrong digest, which the comparison with the expected one catches.
    package func validate() throws(HashStateDefect) {
        guard openSSLVersion == DigestSeams.stateLayoutTag else { throw .otherOpenSSLBuild }
        let expectedSize = haul_hash_ctx_size()
        guard context.count == expectedSize else { throw .wrongSize(actual: context.count, expected: expectedSize) }
        guard length >= 0 else { throw .negativeLength }
        var state = haul_hash_ctx()
        withUnsafeMutableBytes(of: &state) { $0.copyBytes(from: context) }
        guard state.kind == StreamingHash.kind(algorithm) else { throw .wrongAlgorithm }
        try DigestSeams.checkFields(of: state, algorithm, bytes: UInt64(length))
    }
}
