import Foundation

/// The place body bytes are written: a partial file that can be resumed, or a direct output.
package enum OutputSink {
    /// A partial file beside the destination, resumable.
    case partial(PartialFile)
    /// Standard output or a device, written straight through and never resumed.
    case direct(DirectOutput)

    /// The sequential prefix: the bytes written in order from the start, where `append` writes
    /// next (`PartialFile.prefixLength`; segments written beyond it are not counted). A direct
    /// output is only ever appended to, so for it that is every byte written.
    package var prefixLength: Int64 {
        switch self {
        case .partial(let file): return file.prefixLength
        case .direct(let output): return output.length
        }
    }

    package var path: String {
        switch self {
        case .partial(let file): return file.path
        case .direct(let output): return output.path
        }
    }

    package func append(_ bytes: UnsafeRawBufferPointer) throws(StoreError) {
        switch self {
        case .partial(let file): try file.append(bytes)
        case .direct(let output): try output.append(bytes)
        }
    }

    /// Bytes at `offset`, for the overlap check. A direct output cannot be read back.
    package func read(at offset: Int64, count: Int) throws(StoreError) -> [UInt8]? {
        guard case .partial(let file) = self else { return nil }
        return try file.read(at: offset, count: count)
    }

    /// Cuts the written bytes back; a direct output can only "truncate" to where it already is.
    package func truncate(to length: Int64) throws(StoreError) -> Bool {
        switch self {
        case .partial(let file):
            try file.truncate(to: length)
            return true
        case .direct(let output):
            return output.length == length
        }
    }

    /// Dates the file `date` (curl's `-R`): only a partial, the regular file Haul writes and puts
    /// in place; standard output, a FIFO or a device keeps its own times.
    package func setModificationTime(_ date: Date) {
        if case .partial(let file) = self { file.setModificationTime(date) }
    }

    package func syncData() throws(StoreError) {
        if case .partial(let file) = self { try file.syncData() }
    }
}
