import Foundation

/// A digest of the whole file that the server published in its response, which Haul verifies
/// without being asked (`--no-server-digest` turns it off).
package struct ServerDigest: Sendable, Equatable, Codable {
    /// The digest's algorithm.
    package let algorithm: ChecksumAlgorithm
    /// Lower-case hex, as `Checksum` takes it.
    package let expectedHex: String
    /// The header it came from: `Repr-Digest`, `Digest`, `x-goog-hash`, `x-amz-checksum-sha256`...
    package let source: String

    /// A digest of `algorithm` (`expectedHex` in any case) read from the header `source`.
    package init(algorithm: ChecksumAlgorithm, expectedHex: String, source: String) {
        self.algorithm = algorithm
        self.expectedHex = expectedHex.lowercased()
        self.source = source
    }

    /// What the completion event names: `sha256 (Repr-Digest)`.
    package var description: String { "\(algorithm.rawValue) (\(source))" }
}

/// Reads the digests a response publishes for the whole representation. Pure.
///
/// Every digest read here covers the bytes as the server sends them (Haul never decodes a
/// content coding, so those are the bytes on disk) and the whole file whatever the range asked:
/// `Repr-Digest` (RFC 9530), `Digest` (RFC 3230), `x-goog-hash`, `x-amz-checksum-*`.
/// `Content-Digest` covers only this response's content, so it counts only for a 200 (the whole
/// file in one piece). S3's multipart checksums (`…-N`, or `x-amz-checksum-type: COMPOSITE`) are a
/// digest of part digests, not of the file: they are reported as not verifiable, never as a
/// mismatch.
package enum ServerDigests {
    /// What a response offers: the digests Haul can check, strongest first, and the ones it saw
    /// but cannot check (for a message).
    package struct Found: Sendable, Equatable {
        /// The digests Haul can verify, strongest first.
        package var usable: [ServerDigest] = []
        /// The digests seen that cannot be verified (a multipart checksum, an unknown algorithm), named for a message.
        package var unverifiable: [String] = []

        /// The one to verify: the strongest.
        package var best: ServerDigest? { usable.first }
    }

    /// The digests of a response with `status` and `headers` that describe the bytes the
    /// download keeps. Every one read here describes the whole file, so a download of a byte
    /// range keeps none of them (they are named as not verifiable: they describe other bytes).
    package static func read(_ headers: HTTPHeaders, status: Int, keepsWholeFile: Bool = true) -> Found {
        let found = read(headers, status: status)
        guard !keepsWholeFile, !found.usable.isEmpty else { return found }
        let sources = Set(found.usable.map(\.source)).sorted().joined(separator: ", ")
        return Found(usable: [], unverifiable: found.unverifiable + ["\(sources) describes the whole file, not the range downloaded: not checked"])
    }

    private static func read(_ headers: HTTPHeaders, status: Int) -> Found {
        var found = Found()
        for field in headers {
            switch field.name.lowercased() {
            case "repr-digest":
                found.usable += dictionary(field.value, source: "Repr-Digest")
            case "content-digest" where status == 200:
                found.usable += dictionary(field.value, source: "Content-Digest")
            case "digest":
                found.usable += legacy(field.value)
            case "x-goog-hash":
                found.usable += googleHash(field.value)
            case let name where name.hasPrefix("x-amz-checksum-") && name != "x-amz-checksum-type" && name != "x-amz-checksum-mode":
                let (digest, note) = amazon(String(name.dropFirst("x-amz-checksum-".count)), field.value, composite: headers["x-amz-checksum-type"])
                if let digest { found.usable.append(digest) }
                if let note { found.unverifiable.append(note) }
            default:
                continue
            }
        }
        found.usable.sort { strength($0.algorithm) > strength($1.algorithm) }
        return found
    }

    /// The `Want-Repr-Digest` request header Haul sends: SHA-256 preferred (RFC 9530 §4).
    package static let wantHeader = (name: "Want-Repr-Digest", value: "sha-256=10")

    static func strength(_ algorithm: ChecksumAlgorithm) -> Int {
        switch algorithm {
        case .sha512: return 6
        case .sha256: return 5
        case .sha1: return 3
        case .crc64nvme: return 2
        case .md5: return 4
        case .crc32c: return 1
        }
    }

    /// RFC 9530: a structured-field dictionary of byte sequences, `sha-256=:BASE64:`.
    static func dictionary(_ value: String, source: String) -> [ServerDigest] {
        value.split(separator: ",").compactMap { member in
            let parts = member.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, parts[1].count >= 2, parts[1].hasPrefix(":"), parts[1].hasSuffix(":") else { return nil }
            let algorithm: ChecksumAlgorithm
            switch parts[0].lowercased() {
            case "sha-256": algorithm = .sha256
            case "sha-512": algorithm = .sha512
            default: return nil
            }
            return digest(algorithm, base64: String(parts[1].dropFirst().dropLast()), source: source)
        }
    }

    /// RFC 3230: `SHA-256=BASE64, MD5=BASE64` (the algorithm name case-insensitive).
    static func legacy(_ value: String) -> [ServerDigest] {
        value.split(separator: ",").compactMap { member in
            let parts = member.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2 else { return nil }
            let algorithm: ChecksumAlgorithm
            switch parts[0].lowercased() {
            case "sha-256": algorithm = .sha256
            case "sha-512": algorithm = .sha512
            case "md5": algorithm = .md5
            case "sha": algorithm = .sha1
            default: return nil
            }
            return digest(algorithm, base64: parts[1], source: "Digest")
        }
    }

    /// `x-goog-hash: crc32c=BASE64,md5=BASE64` (also as separate fields).
    static func googleHash(_ value: String) -> [ServerDigest] {
        value.split(separator: ",").compactMap { member in
            let parts = member.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2 else { return nil }
            switch parts[0].lowercased() {
            case "crc32c": return digest(.crc32c, base64: parts[1], source: "x-goog-hash")
            case "md5": return digest(.md5, base64: parts[1], source: "x-goog-hash")
            default: return nil
            }
        }
    }

    /// `x-amz-checksum-ALGORITHM: BASE64`, or a multipart one (`BASE64-N`, or `COMPOSITE` type).
    static func amazon(_ name: String, _ value: String, composite type: String?) -> (ServerDigest?, String?) {
        let algorithm: ChecksumAlgorithm
        switch name {
        case "sha256": algorithm = .sha256
        case "sha1": algorithm = .sha1
        case "crc32c": algorithm = .crc32c
        case "crc64nvme": algorithm = .crc64nvme
        default: return (nil, nil)
        }
        let source = "x-amz-checksum-\(name)"
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if type?.trimmingCharacters(in: .whitespaces).uppercased() == "COMPOSITE"
            || trimmed.range(of: #"-[0-9]+$"#, options: .regularExpression) != nil
        {
            return (nil, "\(source) is a multipart checksum (a digest of the parts' digests), which cannot be verified against the file")
        }
        return (digest(algorithm, base64: trimmed, source: source), nil)
    }

    static func digest(_ algorithm: ChecksumAlgorithm, base64: String, source: String) -> ServerDigest? {
        guard let bytes = Data(base64Encoded: base64), bytes.count * 2 == algorithm.hexLength else { return nil }
        let hex = bytes.map { String(format: "%02x", $0) }.joined()
        return ServerDigest(algorithm: algorithm, expectedHex: hex, source: source)
    }
}
