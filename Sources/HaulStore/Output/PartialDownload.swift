import CHaulSystem
import Foundation
import HaulChecksum
import HaulCore

/// The one keeper of a download's files: the layout, the destination lock, the partial file (or
/// the direct output), the name claimed from a response, the resume record and the one
/// `RecordKeeper` that saves it. It opens (loading, trusting, adopting, or finding the finished
/// file in place), hands out what is on disk, records what each response begins, checkpoints,
/// discards, and finishes in the durability order (`PartialDownload+Finish.swift`).
///
/// The download that runs it makes no file-system call of its own. Confined to that download's
/// thread; a segmented download's extra connections write through `PartialFile` and save through
/// `saveSegments`, which the `RecordKeeper`'s lock serialises.
package final class PartialDownload {
    /// Where the files live; nil for a direct output (standard output, a device).
    package let layout: OutputLayout?
    /// Where body bytes go.
    package let sink: OutputSink
    /// The record as this run knows it; saved whenever data depends on it.
    package internal(set) var record: ResumeRecord
    /// The complete file is already in place: an earlier run moved it there and died before
    /// forgetting the record, or finished it and its `FinishedMark` proves it this request's.
    package let alreadyInPlace: Bool
    /// The URL the partial's bytes came from, when it is not this request's: they are continued
    /// only once this server's answer proves the file the same (validators and an overlap).
    package let partialFromAnotherURL: String?
    let keeper: RecordKeeper?
    var lock: DestinationLock?
    /// What names this download's request in the `FinishedMark` its finished file gets.
    var requestKey: String?
    /// The final path claimed among the downloads of this process (a name from a response).
    var claimedPath: String?
    /// The file a response named, proven this request's finished download by its mark (see
    /// `Naming.finishedInPlace`): the download goes on as it (`takingNamedFinishedFile`).
    package internal(set) var namedFinishedFile: FileIdentity?
    /// The change time of a file taken as already in place, when it was taken (opened): the one it
    /// must still have for `markFoundFinished` to mark it.
    let takenChangeTime: Int64?
    /// A checkpoint syncing and saving on another thread; every step that saves, removes,
    /// truncates or renames waits for it first, so no save lands out of order.
    let inFlight = CheckpointInFlight()

    init(
        layout: OutputLayout?, sink: OutputSink, record: ResumeRecord, keeper: RecordKeeper? = nil, lock: DestinationLock? = nil,
        alreadyInPlace: Bool = false, partialFromAnotherURL: String? = nil
    ) {
        self.layout = layout
        self.sink = sink
        self.record = record
        self.keeper = keeper
        self.lock = lock
        self.alreadyInPlace = alreadyInPlace
        self.partialFromAnotherURL = partialFromAnotherURL
        if alreadyInPlace, case .partial(let file) = sink { takenChangeTime = file.changeTime() } else { takenChangeTime = nil }
    }

    /// The final path: given up front, else named by the response (once `name(from:)` chose it);
    /// nil for a direct output and before the name is known. The one place it is derived.
    package var finalPath: String? {
        guard let layout else { return nil }
        return layout.finalPath(named: record.fileName)
    }

    /// The file the user will find: the final path when known, the partial before that, or the
    /// direct output's path.
    package var destinationPath: String {
        guard let layout else { return sink.path }
        return finalPath ?? layout.partialPath
    }

    /// The partial file, for a resumable output.
    package var partialFile: PartialFile? {
        if case .partial(let file) = sink { return file }
        return nil
    }

    /// Bytes on disk: the sequential prefix plus, for a segmented partial, the segments past it.
    package var bytesOnDisk: Int64 {
        sink.prefixLength + (record.segments.map { SegmentTable(segments: $0).bytesDone } ?? 0)
    }

    /// Whether a record for this download exists in its store (loaded or saved by this run).
    package var recordStored: Bool { keeper?.isStored ?? false }

    /// The partial's bytes came from another URL and no overlap has matched yet: validators alone
    /// do not prove them (another server may reuse an entity tag for another file).
    package func needsOverlapProof(for url: URL) -> Bool {
        record.originalURL != url.absoluteString
    }

    /// What the machine is told of the bytes on disk before an attempt; nil when there are none.
    package func localPartial(for url: URL) -> LocalPartial? {
        guard sink.prefixLength > 0 else { return nil }
        var partial = record.partial(bytesOnDisk: sink.prefixLength)
        partial.needsOverlapProof = needsOverlapProof(for: url)
        return partial
    }

    /// Gives up the destination's lock (removing the lock file) and the claimed name; `keepingName`
    /// when the file is complete and in place under it. Safe to call again.
    package func release(keepingName: Bool = false) {
        // A checkpoint still saving must not land after another run took the destination.
        _ = inFlight.settle()
        lock?.release()
        lock = nil
        // A name put in place stays known to this process: a later download of the same batch
        // that the server names alike gets a unique name instead of a refusal.
        if let claimedPath { ClaimedNames.shared.release(claimedPath, completed: keepingName) }
        claimedPath = nil
    }

    /// What of the download is on disk after a failure: the partial, an adopted file back under
    /// its name, or a partial set aside as proven bad. Nil for a direct output (never resumed) and
    /// when nothing is left.
    package func keptData() -> (path: String, bytes: Int64)? {
        guard let layout else { return nil }
        if FileIO.exists(layout.partialPath) {
            let bytes = bytesOnDisk
            return bytes > 0 ? (layout.partialPath, bytes) : nil
        }
        let others = record.isAdopted ? [layout.finalPath].compactMap { $0 } : [layout.rejectedPath]
        for path in others {
            if let size = FileIO.regularFileSize(path), size > 0 { return (path, size) }
        }
        return nil
    }
}
