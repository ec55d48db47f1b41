import Foundation
import HaulChecksum

/// Short-lived links to a finished file, for a browser that cannot send a header: the RPC hands
/// out `/haul/file/<gid>?expires=<unix seconds>&signature=<hex>`, where the signature is
/// HMAC-SHA256 over `gid` and `expires` with a key derived from the server's `--secret`. Anyone
/// holding the link may fetch that one file until it expires; the secret itself is never in it.
/// Pure (the clock is passed in).
struct FileLink: Sendable {
    private let key: [UInt8]

    /// Links of a server whose secret is `secret`. The key is HMAC-SHA256(secret, a fixed label),
    /// so a signature reveals nothing usable as the RPC token.
    init(secret: String) {
        key = Self.hmac(key: Array(secret.utf8), message: Array("haul file link v1".utf8))
    }

    /// The signature of a link to `gid` that expires at `expires` (seconds since 1970), in hex.
    func signature(gid: String, expires: Int64) -> String {
        Self.hmac(key: key, message: Array("\(gid)\n\(expires)".utf8)).map { String($0, radix: 16).leftPadded() }.joined()
    }

    /// Why a link with `signature` and `expires` for `gid` is refused at `now`, or nil when it is
    /// valid. The signature is compared in constant time.
    func refusal(gid: String, expires: Int64?, signature: String?, now: Int64) -> String? {
        guard let expires, let signature else { return "the link has no expiry or no signature" }
        guard Self.constantTimeEquals(Array(signature.utf8), Array(self.signature(gid: gid, expires: expires).utf8)) else {
            return "the link's signature is not valid (made with another secret, or changed)"
        }
        guard now <= expires else { return "the link expired (ask haul.fileLink for a new one)" }
        return nil
    }

    /// Whether `a` and `b` are equal, in a time that depends on the length of neither.
    static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        // Their digests compared: the same length whatever was given, so the time taken says
        // nothing of the secret's length either.
        let (x, y) = (sha256(a), sha256(b))
        var difference: UInt8 = 0
        for index in x.indices { difference |= x[index] ^ y[index] }
        return difference == 0
    }

    /// HMAC-SHA256 (RFC 2104) over the digest HaulChecksum already has.
    static func hmac(key: [UInt8], message: [UInt8]) -> [UInt8] {
        let blockSize = 64
        var block = key.count > blockSize ? sha256(key) : key
        block += [UInt8](repeating: 0, count: blockSize - block.count)
        let inner = sha256(block.map { $0 ^ 0x36 } + message)
        return sha256(block.map { $0 ^ 0x5C } + inner)
    }

    private static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        let hash = StreamingHash(.sha256)
        bytes.withUnsafeBytes { hash.update($0) }
        let hex = Array(hash.finalizeHex().utf8)
        return stride(from: 0, to: hex.count, by: 2).map { index in
            UInt8(Self.nibble(hex[index]) << 4 | Self.nibble(hex[index + 1]))
        }
    }

    private static func nibble(_ digit: UInt8) -> UInt8 {
        digit <= 0x39 ? digit - 0x30 : (digit | 0x20) - 0x61 + 10
    }
}

extension String {
    fileprivate func leftPadded() -> String {
        count >= 2 ? self : "0" + self
    }
}
