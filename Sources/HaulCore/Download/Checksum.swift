/// A digest algorithm Haul can verify a download with.
public enum ChecksumAlgorithm: String, Sendable, Codable, CaseIterable {
    /// MD5 (catches corruption, not tampering).
    case md5
    /// SHA-1 (catches corruption; no longer safe against tampering).
    case sha1
    /// SHA-256.
    case sha256
    /// SHA-512.
    case sha512
    /// CRC-32C (Castagnoli), as S3 and Google Cloud Storage publish it: not a cryptographic digest.
    case crc32c
    /// CRC-64/NVME, as S3 publishes it: not a cryptographic digest.
    case crc64nvme

    /// Hex digits in a digest.
    public var hexLength: Int {
        switch self {
        case .md5: return 32
        case .sha1: return 40
        case .sha256: return 64
        case .sha512: return 128
        case .crc32c: return 8
        case .crc64nvme: return 16
        }
    }
}

/// What a download is checked against: `sha256=HEX` on the command line.
public struct Checksum: Sendable, Equatable {
    /// The digest to compute.
    public let algorithm: ChecksumAlgorithm
    /// Lower-case hex; nil when the digest is only to be computed and reported.
    public let expectedHex: String?

    /// A checksum of `algorithm`, expecting `expectedHex` (any case); nil only computes the digest.
    public init(algorithm: ChecksumAlgorithm, expectedHex: String?) {
        self.algorithm = algorithm
        self.expectedHex = expectedHex?.lowercased()
    }

    /// Parses `ALGORITHM=HEX` (`sha256=…`, `sha512=…`, `sha1=…`, `md5=…`).
    package init(parsing text: String) throws(ChecksumError) {
        guard let equals = text.firstIndex(of: "=") else {
            throw ChecksumError(message: "expected ALGORITHM=HEX, e.g. sha256=9f86d0…")
        }
        let name = text[..<equals].lowercased().replacingOccurrences(of: "-", with: "")
        guard let algorithm = ChecksumAlgorithm(rawValue: name) else {
            throw ChecksumError(message: "unknown algorithm \"\(text[..<equals])\" (use sha256, sha512, sha1, md5, crc32c or crc64nvme)")
        }
        let hex = String(text[text.index(after: equals)...]).lowercased()
        guard hex.count == algorithm.hexLength, hex.allSatisfy({ $0.isHexDigit }) else {
            throw ChecksumError(message: "a \(algorithm.rawValue) digest has \(algorithm.hexLength) hex digits")
        }
        self.init(algorithm: algorithm, expectedHex: hex)
    }
}

extension Checksum: CustomStringConvertible {
    /// The text form: `ALGORITHM=HEX` (`sha256=9f86d0…`, lower case), or the algorithm's name
    /// alone when the digest is only computed.
    public var description: String {
        algorithm.rawValue + (expectedHex.map { "=" + $0 } ?? "")
    }
}

/// Encoded as its text form (`description`), which is how the queue stores it.
extension Checksum: Codable {
    /// Reads the text form: an algorithm's name alone (a digest only computed), or what
    /// `init(parsing:)` reads.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        if let algorithm = ChecksumAlgorithm(rawValue: text) {
            self.init(algorithm: algorithm, expectedHex: nil)
            return
        }
        do {
            try self.init(parsing: text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a checksum: \(error.message)")
        }
    }

    /// Writes the text form (`description`).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// Why a `ALGORITHM=HEX` text is not a checksum Haul can verify.
package struct ChecksumError: Error, Sendable, Equatable {
    /// What is wrong, for a person.
    package let message: String
}
