import CCrypto
import HaulCore

/// A digest computed as bytes arrive, whose state can be saved with a checkpoint and restored in a
/// later run, so a resumed download does not re-read what is already on disk.
public final class StreamingHash {
    public let algorithm: ChecksumAlgorithm
    private let context: UnsafeMutablePointer<haul_hash_ctx>
    /// Bytes fed so far.
    public private(set) var length: Int64

    public init(_ algorithm: ChecksumAlgorithm) {
        self.algorithm = algorithm
        context = .allocate(capacity: 1)
        length = 0
        haul_hash_init(context, Self.kind(algorithm))
    }

    /// Restores a saved state; nil when it was saved by another OpenSSL build or is damaged (see
    /// `SavedHashState.validate()`), in which case the caller re-hashes the prefix once.
    public init?(restoring saved: SavedHashState) {
        // Checked in full before any byte reaches libcrypto, which trusts every field it is given.
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

    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        haul_hash_update(context, base, bytes.count)
        length += Int64(bytes.count)
    }

    /// The state to store beside `length` bytes of data.
    public func save() -> SavedHashState {
        let bytes = [UInt8](UnsafeRawBufferPointer(start: UnsafeRawPointer(context), count: haul_hash_ctx_size()))
        return SavedHashState(algorithm: algorithm, length: length, openSSLVersion: UInt64(haul_openssl_version()), context: bytes)
    }

    /// The digest as lower-case hex. The state is consumed: the hash must not be updated after.
    public func finalizeHex() -> String {
        var digest = [UInt8](repeating: 0, count: 64)
        let count = Int(haul_hash_final(context, &digest))
        let hex: [Character] = Array("0123456789abcdef")
        var text = ""
        text.reserveCapacity(count * 2)
        for byte in digest.prefix(count) {
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 0x0F)])
        }
        return text
    }

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
public struct SavedHashState: Sendable, Codable, Equatable {
    public let algorithm: ChecksumAlgorithm
    /// Bytes of the file the state covers.
    public let length: Int64
    /// The state's layout belongs to one OpenSSL build.
    public let openSSLVersion: UInt64
    public let context: [UInt8]

    public init(algorithm: ChecksumAlgorithm, length: Int64, openSSLVersion: UInt64, context: [UInt8]) {
        self.algorithm = algorithm
        self.length = length
        self.openSSLVersion = openSSLVersion
        self.context = context
    }
}
