import Foundation
import HaulChecksum
import HaulCore
import HaulStore

extension DownloadRunner {
    /// Prepares the digest of what is already on disk: the saved state when the record has one
    /// that fits (only the bytes after it are read), else the whole prefix, read once.
    func startHash(_ output: PreparedOutput) throws(DownloadError) {
        guard let checksum = request.checksum else { return }
        var restored: StreamingHash?
        if let saved = record.hashState, saved.algorithm == checksum.algorithm, saved.length <= output.sink.length {
            restored = StreamingHash(restoring: saved)
        }
        let hash = restored ?? StreamingHash(checksum.algorithm)
        var offset = hash.length
        let chunk = 1 << 20
        while offset < output.sink.length {
            let count = Int(min(Int64(chunk), output.sink.length - offset))
            let bytes: [UInt8]?
            do {
                bytes = try output.sink.read(at: offset, count: count)
            } catch {
                throw DownloadError(.io, error.message)
            }
            guard let bytes, bytes.count == count else {
                throw DownloadError(.io, "cannot read back \(output.sink.path) to compute its \(checksum.algorithm.rawValue) digest")
            }
            bytes.withUnsafeBytes { hash.update($0) }
            offset += Int64(count)
        }
        self.hash = hash
    }

    /// The digest of the finished file, checked against the expected one. On a mismatch the data
    /// stays as a partial file (with its record) and the error names both digests.
    func verifyDigest(_ output: PreparedOutput) throws(DownloadError) -> String? {
        guard let checksum = request.checksum, let hash else { return nil }
        let actual = hash.finalizeHex()
        self.hash = nil
        guard let expected = checksum.expectedHex, expected != actual else {
            return "\(checksum.algorithm.rawValue):\(actual)"
        }
        checkpointQuietly()
        let kept = output.layout.map { " The data is kept in \($0.partialPath)." } ?? ""
        throw DownloadError(.checksum, """
            \(checksum.algorithm.rawValue) mismatch: expected \(expected), got \(actual).\(kept)
            """)
    }
}
