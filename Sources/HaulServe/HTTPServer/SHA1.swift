import HaulChecksum

/// SHA-1, for the one thing it is still used for here: the WebSocket handshake's
/// `Sec-WebSocket-Accept` (RFC 6455 section 4.2.2). Computed by the project's digests
/// (`StreamingHash`: libcrypto on Linux, CommonCrypto on Apple platforms).
enum SHA1 {
    /// The 20-byte digest of `message`.
    static func digest(_ message: some Collection<UInt8>) -> [UInt8] {
        let hash = StreamingHash(.sha1)
        Array(message).withUnsafeBytes { hash.update($0) }
        let hex = Array(hash.finalizeHex().utf8)
        return stride(from: 0, to: hex.count - 1, by: 2).map { UInt8(nibble(hex[$0]) << 4 | nibble(hex[$0 + 1])) }
    }

    /// The value of one lower-case hex digit.
    private static func nibble(_ digit: UInt8) -> UInt8 {
        digit >= UInt8(ascii: "a") ? digit - UInt8(ascii: "a") + 10 : digit - UInt8(ascii: "0")
    }
}
