import Foundation
import HaulChecksum
import HaulCore

/// What a response begins, the name it gives the file, the bytes it writes, and the checkpoints
/// that make them durable.
extension PartialDownload {
    /// A fresh download whose whole body is at most this big skips the record until its first
    /// checkpoint: without a record its bytes are only ever trusted after the overlap check, and
    /// for many small files the record would cost more than re-fetching one.
    package static let recordlessBodyLimit: Int64 = 1 << 20

    /// What naming a download from a response found.
    package enum Naming: Equatable, Sendable {
        /// The name is the download's; `note`: what to say about a name changed to stay unique.
        case named(note: String?)
        /// The file the response names is this request's own finished download, proven by its
        /// `FinishedMark` (the same request run again): nothing is to be written, and the download
        /// goes on as that file (`takingNamedFinishedFile`).
        case finishedInPlace
    }

    /// Picks the file name for a download into a directory from a response: never a symlink,
    /// never a file that exists (unless `overwrite`, or its mark proves it this request's finished
    /// download: `.finishedInPlace`), and, when another download of this process took the same
    /// name, a unique one (`report (1).pdf`). Named once per run: a later attempt keeps the name
    /// it claimed.
    package func name(contentDisposition: String?, url: URL, overwrite: Bool) throws(OutputError) -> Naming {
        guard let layout, layout.finalPath == nil, claimedPath == nil else { return .named(note: nil) }
        let wanted = record.fileName ?? FileNameSanitizer.destinationName(contentDisposition: contentDisposition, url: url)
        // Only before anything is written (a first response), and only a file its mark proves this
        // very request's, unchanged since, is its own; anything else is in the way.
        let key = record.fileName == nil && !overwrite && sink.prefixLength == 0 && record.segments == nil ? requestKey : nil
        let proof = { (path: String) in key.flatMap { FinishedMark.provenFinished(at: path, request: $0) } }
        let claim = ClaimedNames.shared.claim(wanted, replacing: overwrite, path: layout.path(forName:), isOwn: { proof($0) != nil })
        let path = layout.path(forName: claim.name)
        claimedPath = path
        // What the claim just saw there when it looked (a file appearing after is the rename's
        // to refuse, as one appearing after a second look would be).
        let existing = claim.seen ?? PathKind.of(path)
        if existing == .symlink { throw .symlink(path) }
        if record.fileName == nil, !overwrite, existing != .missing {
            guard existing == .regular, let proven = proof(path) else { throw .alreadyExists(path) }
            record.fileName = claim.name
            namedFinishedFile = proven
            return .finishedInPlace
        }
        record.fileName = claim.name
        guard claim.renamed else { return .named(note: nil) }
        return .named(note: "another download of this run is saving \(wanted) in \(layout.directory): this one is saved as \(claim.name)")
    }

    /// Records the version a response begins to write (from `url`): its validators and lengths.
    /// Returns whether the record must be saved before any of its bytes reach the file: always,
    /// except for a small fresh download that has no record yet (see `recordlessBodyLimit`).
    package func begin(_ body: BodyPlan, from url: URL) -> Bool {
        record.finalURL = url.absoluteString
        record.finishedLength = nil
        record.validators = body.validators
        record.totalLength = body.totalLength
        record.finalLength = body.finalLength
        record.contentEncoding = body.contentEncoding
        record.resourceStart = body.resourceStart
        let small = body.expectedBodyLength.map { $0 <= Self.recordlessBodyLimit } ?? false
        return recordStored || !small || body.writeOffset > 0
    }

    /// The overlap matched: the partial (adopted, or from another URL) is proven a prefix of the
    /// version `url` serves, and continues as this request's own.
    package func markProven(for url: URL) -> Bool {
        guard record.isAdopted || needsOverlapProof(for: url) else { return false }
        record.isAdopted = false
        record.originalURL = url.absoluteString
        return true
    }

    /// The digest of the whole file the server published, checked once the file is complete.
    package func noteServerDigest(_ digest: ServerDigest) {
        record.serverDigest = digest
    }

    /// Saves the record, claiming `syncedLength` bytes as durable: the caller synced at least that
    /// much. A direct output has no record.
    package func saveRecord(syncedLength: Int64, hash: StreamingHash?) throws(StoreError) {
        if let failure = inFlight.settle() { throw failure }
        guard let keeper else { return }
        try keeper.save(&record, syncedLength: syncedLength, hash: hash)
    }

    /// Saves the record without claiming more bytes than the last save did.
    package func saveRecordClaimingNoMore(hash: StreamingHash?) throws(StoreError) {
        try saveRecord(syncedLength: min(record.syncedLength, sink.prefixLength), hash: hash)
    }

    /// `saveRecordClaimingNoMore` in two halves: the record is stamped now, on the caller's thread
    /// (the event loop's), and the returned job writes it, after any checkpoint still running, on
    /// a thread that may wait for the store. No byte of the response may reach the file before the
    /// job ended. Nil when there is no record to keep (a direct output).
    package func recordSaveJob(hash: StreamingHash?) -> (@Sendable () throws(StoreError) -> Void)? {
        guard let keeper else { return nil }
        RecordKeeper.stamp(&record, syncedLength: min(record.syncedLength, sink.prefixLength), hash: hash)
        let stamped = record
        let inFlight = self.inFlight
        return { () throws(StoreError) in
            if let failure = inFlight.settle() { throw failure }
            try keeper.saveStamped(stamped)
        }
    }

    /// Makes the bytes so far durable and records them: data first, then the record that claims it.
    package func checkpoint(hash: StreamingHash?) throws(StoreError) {
        guard layout != nil else { return }
        if let failure = inFlight.settle() { throw failure }
        try sink.syncData()
        try saveRecord(syncedLength: sink.prefixLength, hash: hash)
    }

    /// `checkpoint`, with the sync and the save handed to `run` (a pool thread): the caller, the
    /// event loop's thread, never waits for the disk. The record saved is the one of now, claiming
    /// the bytes written so far and the digest's state at them; writes go on meanwhile (the sync
    /// makes at least those bytes durable). At most one runs: while one does, this does nothing.
    /// Returns the failure of an earlier one that ended (the download fails on it as on any
    /// checkpoint's). Every later step that saves waits for it first.
    package func checkpointInBackground(hash: StreamingHash?, on run: (@escaping @Sendable () -> Void) -> Void) -> StoreError? {
        if let failure = inFlight.takeFailure() { return failure }
        guard layout != nil, let file = partialFile, let keeper, inFlight.start() else { return nil }
        var snapshot = record
        snapshot.hashState = hash?.save() ?? snapshot.hashState
        let length = sink.prefixLength
        let inFlight = self.inFlight
        let saving = snapshot
        run {
            var record = saving
            do throws(StoreError) {
                try file.syncData()
                try keeper.save(&record, syncedLength: length, hash: nil)
                inFlight.ended(nil)
            } catch {
                inFlight.ended(error)
            }
        }
        return nil
    }

    /// Whether a checkpoint runs in the background now (giving the bytes up would wait for it).
    package var checkpointRunning: Bool { inFlight.isRunning }

    /// Waits for a checkpoint running in the background; returns its failure.
    package func settleCheckpoint() -> StoreError? {
        inFlight.settle()
    }

    // MARK: segments

    /// The mapped progress file of a segmented download starting with `segments` past `prefix`;
    /// nil without one (no memory map here: progress is then recorded every 0.1 s instead, so a
    /// failure costs re-fetching, never trust).
    package func segmentProgressMap(prefix: Int64, segments: [Segment]) -> SegmentProgressMap? {
        guard let layout else { return nil }
        do {
            return try SegmentProgressMap(path: layout.segmentMapPath, prefix: prefix, segments: segments)
        } catch {
            return nil
        }
    }

    /// How a segmented download's monitor saves its progress (from any thread): the record as it
    /// is now, with `prefix` sequential bytes and `segments`, durable when `synced`, and the hosts
    /// that refused a connection (`connectionCaps`, none: nil).
    package func segmentSaver() -> (@Sendable (Int64, [Segment], Bool, [ConnectionCap]) throws(StoreError) -> Void)? {
        _ = inFlight.settle()
        guard let keeper else { return nil }
        let snapshot = record
        return { prefix, segments, synced, caps throws(StoreError) in
            var base = snapshot
            base.connectionCaps = caps.isEmpty ? nil : caps
            try keeper.saveSegments(base, prefix: prefix, segments: segments, synced: synced)
        }
    }

    /// Hosts that refused a connection of this download while its segments ran: every later
    /// save of the record keeps them, so no run asks them for more.
    package func rememberConnectionCaps(_ caps: [ConnectionCap]) {
        record.connectionCaps = caps.isEmpty ? nil : caps
    }

    /// The segments ended: the record holds no segments any more. A complete file's prefix covers
    /// `total` bytes; otherwise the partial is cut back to the `reach` of its contiguous bytes (its
    /// length must never vouch for holes).
    package func endSegments(total: Int64?, reach: Int64) throws(StoreError) {
        if let failure = inFlight.settle() { throw failure }
        record.segments = nil
        record.segmentPrefix = nil
        guard let file = partialFile else { return }
        if let total {
            file.setPrefixLength(total)
        } else {
            try file.truncate(to: reach)
        }
    }
}
