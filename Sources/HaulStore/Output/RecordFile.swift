import Foundation
import HaulCore

/// A resume record stored as a small JSON file beside the partial file, replaced atomically.
///
/// Replacement is write-to-temporary, fsync, rename, fsync the directory: a crash leaves either
/// the old record or the new one, never a torn mix.
package struct RecordFile: Sendable {
    /// Added to the record's path to name the temporary it is written to before the rename.
    package static let temporarySuffix = ".tmp"

    /// Where the record lives.
    package let path: String

    package init(path: String) {
        self.path = path
    }

    /// The record, nil when there is none. A record that cannot be decoded or has an unknown
    /// version throws `.corruptRecord`.
    package func load() throws(StoreError) -> ResumeRecord? {
        LoopThread.mustNotBlock("reading the resume record \(path)")
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw StoreError(.io, "cannot read the resume record \(path): \(error.localizedDescription)")
        }
        return try ResumeRecordCodec.decode(data, "the resume record \(path)")
    }

    /// Replaces the record atomically and durably.
    package func save(_ record: ResumeRecord) throws(StoreError) {
        LoopThread.mustNotBlock("saving the resume record \(path)")
        try write(record, durably: true)
    }

    /// Replaces the record atomically; the disk catches up later.
    package func saveVolatile(_ record: ResumeRecord) throws(StoreError) {
        try write(record, durably: false)
    }

    private func write(_ record: ResumeRecord, durably: Bool) throws(StoreError) {
        let data = Data(try ResumeRecordCodec.encode(record).utf8)
        try FileIO.replace(path, with: data, temporary: path + Self.temporarySuffix, durably: durably)
    }

    /// Removes the record (and a leftover temporary). Missing files are fine.
    package func remove() {
        unlink(path)
        unlink(path + Self.temporarySuffix)
    }
}
