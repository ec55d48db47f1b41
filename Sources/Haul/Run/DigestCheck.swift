import Foundation
import HaulChecksum
import HaulCore
import HaulStore

/// The digest of one download: what the finished file is checked against (the user's `checksum`,
/// else the digest the server published), the running hash of the bytes on disk, and the check at
/// the end. Confined to the download's thread.
final class DigestCheck {
    private let checksum: Checksum?
    private let verifiesServerDigest: Bool
    private let wholeResource: Bool
    /// The digest of the bytes on disk so far, when one is checked.
    private(set) var hash: StreamingHash?
    /// The whole-file digest the server published, checked when no `checksum` was given.
    private(set) var serverDigest: ServerDigest?

    init(_ request: DownloadRequest) {
        checksum = request.checksum
        verifiesServerDigest = request.verifiesServerDigest
        wholeResource = request.target == .whole
    }

    /// What the finished file is checked against.
    var expected: Checksum? {
        checksum ?? serverDigest.map { Checksum(algorithm: $0.algorithm, expectedHex: $0.expectedHex) }
    }

    /// A digest of the whole file that proves a mirror's bytes (one with an expected value).
    var wholeFileDigest: Checksum? {
        expected.flatMap { $0.expectedHex == nil ? nil : $0 }
    }

    /// Whether the user gave the expected digest (not the server).
    var isUsers: Bool { checksum != nil }

    /// Prepares the digest of what is already on disk: the saved state when the record has one
    /// that fits (only the bytes after it are read), else the whole prefix, read once.
    func start(_ output: PartialDownload) throws(DownloadError) {
        if serverDigest == nil, checksum == nil, verifiesServerDigest { serverDigest = output.record.serverDigest }
        guard let algorithm = expected?.algorithm else { return }
        try start(output, algorithm: algorithm)
    }

    private func start(_ output: PartialDownload, algorithm: ChecksumAlgorithm) throws(DownloadError) {
        var restored: StreamingHash?
        if let saved = output.record.hashState, saved.algorithm == algorithm, saved.length <= output.sink.prefixLength {
            restored = StreamingHash(restoring: saved)
        }
        let hash = restored ?? StreamingHash(algorithm)
        try feed(hash, from: output, upTo: output.sink.prefixLength)
        self.hash = hash
    }

    /// A response publishing a digest of the whole file (and no `checksum` given): the file will
    /// be checked against it. Called before any byte of the response is written. A digest for
    /// another algorithm than the one being computed starts that one from the bytes on disk.
    /// Returns what to say about digests it published that cannot be checked.
    func adoptServerDigest(from head: ResponseHead, output: PartialDownload) throws(DownloadError) -> String? {
        guard checksum == nil, verifiesServerDigest else { return nil }
        let found = ServerDigests.read(head.headers, status: head.status, keepsWholeFile: wholeResource)
        if let best = found.best {
            serverDigest = best
            output.noteServerDigest(best)
            if hash?.algorithm != best.algorithm {
                // A saved state of this algorithm is restored; one of another is ignored there.
                try start(output, algorithm: best.algorithm)
            }
        }
        return found.unverifiable.isEmpty ? nil : found.unverifiable.joined(separator: "; ")
    }

    /// Body bytes just written, in order.
    func update(_ bytes: UnsafeRawBufferPointer) {
        hash?.update(bytes)
    }

    /// Reads what the hash has not seen of the file, up to `end` (after segments, or a cut-back).
    func catchUp(from output: PartialDownload, upTo end: Int64) throws(DownloadError) {
        guard let hash else { return }
        try feed(hash, from: output, upTo: end)
    }

    /// The bytes on disk were given up: a new version starts, whose digest the server sends again.
    func restart() {
        serverDigest = nil
        hash = checksum.map { StreamingHash($0.algorithm) }
    }

    private func feed(_ hash: StreamingHash, from output: PartialDownload, upTo end: Int64) throws(DownloadError) {
        var offset = hash.length
        let chunk = 1 << 20
        while offset < end {
            let count = Int(min(Int64(chunk), end - offset))
            let bytes: [UInt8]?
            do {
                bytes = try output.sink.read(at: offset, count: count)
            } catch {
                throw DownloadError(.io, error)
            }
            guard let bytes, bytes.count == count else {
                throw DownloadError(.io, "cannot read back \(output.sink.path) to compute its \(hash.algorithm.rawValue) digest")
            }
            bytes.withUnsafeBytes { hash.update($0) }
            offset += Int64(count)
        }
    }

    /// Whether `verify` has a digest to finish and check (or report).
    var hasDigestToVerify: Bool { expected != nil && hash != nil }

    /// The digest of the finished file, checked against the expected one. On a mismatch the data
    /// is set aside (or, when it cannot be, kept as a partial: `checkpointOnExit` records it) and
    /// the error names both digests.
    func verify(_ output: PartialDownload, checkpointOnExit: () -> StoreError?) throws(DownloadError) -> String? {
        guard let expected, let hash else { return nil }
        // Segments fetched by other connections were not hashed as they arrived: read them now.
        try feed(hash, from: output, upTo: output.sink.prefixLength)
        let actual = hash.finalizeHex()
        self.hash = nil
        let named = checksum == nil ? serverDigest.map { " (the server's \($0.source))" } ?? "" : ""
        guard let wanted = expected.expectedHex, wanted != actual else {
            return "\(expected.algorithm.rawValue):\(actual)\(named)"
        }
        var failure: StoreError?
        var kept = ""
        if output.alreadyInPlace, let path = output.finalPath {
            // A finished file in place (the same request again): it stays as it is, and nothing
            // was written beside it.
            kept = " \(path) is left as it was."
        } else if let layout = output.layout {
            if let aside = output.setAside() {
                kept = " The data is kept in \(aside); the next run downloads the file anew."
            } else {
                failure = checkpointOnExit()
                kept = " The data is kept in \(layout.partialPath)."
            }
        }
        throw DownloadError(
            .checksum,
            """
            \(expected.algorithm.rawValue) mismatch\(named): expected \(wanted), got \(actual).\(kept)\(failure.map { " (The checkpoint failed: \($0.message).)" } ?? "")
            """)
    }
}
