import Foundation
import HaulChecksum
import HaulCore
import HaulStore

extension DownloadRunner {
    /// What the finished file is checked against: the user's `checksum`, else the digest the
    /// server published (when `verifiesServerDigest`).
    var expectedDigest: Checksum? {
        request.checksum ?? serverDigest.map { Checksum(algorithm: $0.algorithm, expectedHex: $0.expectedHex) }
    }

    /// Prepares the digest of what is already on disk: the saved state when the record has one
    /// that fits (only the bytes after it are read), else the whole prefix, read once.
    func startHash(_ output: PartialDownload) throws(DownloadError) {
        if serverDigest == nil, request.checksum == nil, request.verifiesServerDigest { serverDigest = output.record.serverDigest }
        guard let algorithm = expectedDigest?.algorithm else { return }
        try startHash(output, algorithm: algorithm)
    }

    private func startHash(_ output: PartialDownload, algorithm: ChecksumAlgorithm) throws(DownloadError) {
        var restored: StreamingHash?
        if let saved = output.record.hashState, saved.algorithm == algorithm, saved.length <= output.sink.length {
            restored = StreamingHash(restoring: saved)
        }
        let hash = restored ?? StreamingHash(algorithm)
        try feed(hash, from: output, upTo: output.sink.length)
        self.hash = hash
    }

    /// A response publishing a digest of the whole file (and no `--checksum` given): the file will
    /// be checked against it. Called before any byte of the response is written. A digest for
    /// another algorithm than the one being computed starts that one from the bytes on disk.
    func adoptServerDigest(from head: ResponseHead, output: PartialDownload) throws(DownloadError) -> String? {
        guard request.checksum == nil, request.verifiesServerDigest else { return nil }
        let found = ServerDigests.read(head.headers, status: head.status, keepsWholeFile: request.target == .whole)
        if let best = found.best {
            serverDigest = best
            output.noteServerDigest(best)
            if hash?.algorithm != best.algorithm {
                // A saved state of this algorithm is restored; one of another is ignored there.
                try startHash(output, algorithm: best.algorithm)
            }
        }
        return found.unverifiable.isEmpty ? nil : found.unverifiable.joined(separator: "; ")
    }

    /// Hashes the file's bytes from what the hash has seen up to `end`, reading them from disk.
    func feed(_ hash: StreamingHash, from output: PartialDownload, upTo end: Int64) throws(DownloadError) {
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

    /// The digest of the finished file, checked against the expected one. On a mismatch the data
    /// stays as a partial file (with its record) and the error names both digests.
    func verifyDigest(_ output: PartialDownload) throws(DownloadError) -> String? {
        guard let checksum = expectedDigest, let hash else { return nil }
        // Segments fetched by other connections were not hashed as they arrived: read them now.
        try feed(hash, from: output, upTo: output.sink.length)
        let actual = hash.finalizeHex()
        self.hash = nil
        let named = request.checksum == nil ? serverDigest.map { " (the server's \($0.source))" } ?? "" : ""
        guard let expected = checksum.expectedHex, expected != actual else {
            return "\(checksum.algorithm.rawValue):\(actual)\(named)"
        }
        var failure: StoreError?
        var kept = ""
        if let layout = output.layout {
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
            \(checksum.algorithm.rawValue) mismatch\(named): expected \(expected), got \(actual).\(kept)\(failure.map { " (The checkpoint failed: \($0.message).)" } ?? "")
            """)
    }
}
