import HaulCore

#if canImport(CCrypto)
    import CCrypto
#elseif canImport(CommonCrypto)
    import CHaulSystem
#endif

/// A digest computed as bytes arrive, whose state can be saved with a checkpoint and restored in a
/// later run, so a resumed download does not re-read what is already on disk.
package final class StreamingHash {
    /// The digest or CRC being computed.
    package let algorithm: ChecksumAlgorithm
    private let context: UnsafeMutablePointer<haul_hash_ctx>
    /// Bytes fed so far.
    package private(set) var length: Int64

    /// A hash that has seen no byte yet.
    package init(_ algorithm: ChecksumAlgorithm) {
        self.algorithm = algorithm
        context = .allocate(capacity: 1)
        length = 0
        haul_hash_init(context, Self.kind(algorithm))
    }

    /// Restores a saved state; nil when it was saved by another build (OpenSSL's on Linux, the OS's
    /// on Apple platforms) or is damaged (see `SavedHashState.validate()`), in which case the caller
    /// re-hashes the prefix once.
    package init?(restoring saved: SavedHashState) {
        // Checked in full before any byte reaches libcrypto or CommonCrypto, which trust every field
        // they are given.
        do throws(HashStateDefect) {
            try saved.validate()
        } catch {
            return nil
        }
        algorithm = saved.algorithm
        context = .allocate(capacity: 1)
        length = saved.length
        saved.context.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress else { return }
            UnsafeMutableRawPointer(context).copyMemory(from: base, byteCount: bytes.count)
        }
    }

    deinit {
        context.deallocate()
    }

    /// Feeds the next bytes of the file.
    package func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        switch algorithm {
        case .crc32c: context.pointee.u.crc32c = CRC32C.update(context.pointee.u.crc32c, bytes)
        case .crc64nvme: context.pointee.u.crc64nvme = CRC64NVME.update(context.pointee.u.crc64nvme, bytes)
        case .md5, .sha1, .sha256, .sha512: haul_hash_update(context, base, bytes.count)
        }
        length += Int64(bytes.count)
    }

    /// The state to store beside `length` bytes of data.
    package func save() -> SavedHashState {
        let bytes = [UInt8](UnsafeRawBufferPointer(start: UnsafeRawPointer(context), count: haul_hash_ctx_size()))
        return SavedHashState(algorithm: algorithm, length: length, openSSLVersion: DigestSeams.stateLayoutTag, context: bytes)
    }

    /// The digest as lower-case hex. The state is consumed: the hash must not be updated after.
    package func finalizeHex() -> String {
        let digest: [UInt8]
        switch algorithm {
        // Big-endian, as S3 and Google Cloud Storage encode them.
        case .crc32c: digest = withUnsafeBytes(of: context.pointee.u.crc32c.bigEndian) { Array($0) }
        case .crc64nvme: digest = withUnsafeBytes(of: context.pointee.u.crc64nvme.bigEndian) { Array($0) }
        case .md5, .sha1, .sha256, .sha512:
            var buffer = [UInt8](repeating: 0, count: 64)
            let count = Int(haul_hash_final(context, &buffer))
            digest = Array(buffer.prefix(count))
        }
        // Bytes, then one String: appending Characters costs a grapheme check each.
        var text: [UInt8] = []
        text.reserveCapacity(digest.count * 2)
        for byte in digest {
            text.append(Self.hexDigits[Int(byte >> 4)])
            text.append(Self.hexDigits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    static func kind(_ algorithm: ChecksumAlgorithm) -> Int32 {
        switch algorithm {
        case .md5: return Int32(HAUL_MD5)
        case .sha1: return Int32(HAUL_SHA1)
        case .sha256: return Int32(HAUL_SHA256)
        case .sha512: return Int32(HAUL_SHA512)
        case .crc32c: return Int32(HAUL_CRC32C)
        case .crc64nvme: return Int32(HAUL_CRC64NVME)
        }
    }
}

/// A hash state as a record stores it.
package struct SavedHashState: Sendable, Codable, Equatable {
    /// The algorithm whose state this is.
    package let algorithm: ChecksumAlgorithm
    /// Bytes of the file the state covers.
    package let length: Int64
    /// The build the state's layout belongs to: OpenSSL's version number on Linux, a tag of the OS
    /// build on Apple platforms (see `DigestSeams.stateLayoutTag`). The name is what records store.
    package let openSSLVersion: UInt64
    /// The bytes of the C context (`haul_hash_ctx`), checked by `validate()` before any use.
    package let context: [UInt8]

    /// A state as a record stores it; nothing is checked until it is restored.
    package init(algorithm: ChecksumAlgorithm, length: Int64, openSSLVersion: UInt64, context: [UInt8]) {
        self.algorithm = algorithm
        self.length = length
        self.openSSLVersion = openSSLVersion
        self.context = context
    }
}
