import Foundation
import HaulCore
import HaulEngine
import HaulStore

/// What a body writer reports to the download it writes for, and asks of it.
protocol BodyWriterHost: AnyObject {
    /// The response replaces the bytes on disk (a 200 to a request for the rest): the machine
    /// counts the restart, and the bytes are given up.
    func replacePartial(_ reason: RestartReason) throws(DownloadError)
    /// An event for the download's stream.
    func publish(_ event: DownloadEvent)
    /// The body of a response from `url` starts: its first report's speed is measured from here.
    func bodyStarts(from url: URL)
    /// Whether `bodyAccepted` would start segment connections for this response: a pure look.
    func segmentsMayStart(_ body: BodyPlan, head: ResponseHead, sent: TransferRequest) -> Bool
    /// The response's head was accepted and announced: the rest may go to segment connections.
    /// Called on the blocking pool when it starts them (they open and sync files), while this
    /// transfer is parked.
    func bodyAccepted(_ body: BodyPlan, head: ResponseHead, sent: TransferRequest)
    /// Body bytes of this connection consumed (compared or written).
    func received(_ count: Int)
    /// Progress and checkpoints, as the pacer says; a failed checkpoint's error.
    func tick() -> StoreError?
}

/// Receives one response for a download: judges its head, proves the overlap, writes the body
/// through the file keeper, and reports to its host. Runs on the download's thread, inside the transport.
final class BodyWriter: RedirectStopping {
    private unowned let host: any BodyWriterHost
    let request: DownloadRequest
    private let digest: DigestCheck
    private let segments: SegmentDriver
    private let control: RunControl
    let plan: RequestPlan
    let output: PartialDownload
    /// The request this response answers (the final hop of its redirect chain).
    let sent: TransferRequest
    var url: URL { sent.url }

    /// A redirect to follow; the runner makes the next request.
    private(set) var redirectHead: ResponseHead?
    /// An outcome the head or the body already decided.
    var decided: AttemptOutcome?
    var body: BodyPlan?
    /// Where each body byte goes (compared, written, refused); set when the head is accepted.
    var cursor: BodyCursor?
    private(set) var bodyBytesWritten: Int64 = 0
    /// Set when this response gave up the bytes on disk (a 200 to a request for the rest): the
    /// machine counts it as a restart.
    private(set) var restartedInPlace: RestartReason?
    /// When `bodyBytesWritten` reaches this, the free space is checked again.
    var nextSpaceCheck: Int64 = 0
    /// The sequential connection of a segmented download reached the part other connections fetch.
    var reachedSegments = false
    /// Said with the response event (a name changed to stay unique).
    private var responseNote: String?
    /// What this response waits for before more of its body reaches the file (its record saved,
    /// its segment connections started), and the bytes that came meanwhile.
    private let parked = ParkedBody()
    /// The grain this transfer reads in (its speed limit's when it started), when it may be ended
    /// and continued by range once the limit makes it out of step (`regrainDue`).
    private var grain: (bytes: Int, since: ContinuousClock.Instant)?

    init(
        host: any BodyWriterHost, request: DownloadRequest, digest: DigestCheck, segments: SegmentDriver, control: RunControl, plan: RequestPlan,
        output: PartialDownload, sent: TransferRequest
    ) {
        self.host = host
        self.request = request
        self.digest = digest
        self.segments = segments
        self.control = control
        self.plan = plan
        self.output = output
        self.sent = sent
    }

    // MARK: head

    func transferDidReceiveHead(_ head: ResponseHead) -> TransferControl {
        if head.isRedirect {
            redirectHead = head
            return .stop
        }
        switch ResponseVerdict.evaluate(head, for: plan) {
        case .write(let body):
            return accept(body, head: head)
        case .complete:
            decided = .complete
        case .restart(let reason):
            decided = .restart(reason)
        case .fail(let failure):
            decided = Self.outcome(for: failure, head: head)
        }
        return .stop
    }

    private func accept(_ body: BodyPlan, head: ResponseHead) -> TransferControl {
        var saves = false
        do throws(DownloadError) {
            try checkFreeSpace(body)
            if body.writeOffset == 0 && output.sink.prefixLength > 0 && body.overlap == 0 {
                let reason =
                    body.restartReason ?? RestartReason(.serverIgnoredRange, "the server sent the whole file again: restarting from byte 0")
                if segments.isRunning || output.checkpointRunning {
                    // Giving the bytes up would wait here (this is the event loop's thread) for
                    // the segment connections and a checkpoint to end: the machine gives them up
                    // on the pool instead, and asks again from byte 0.
                    decided = .restart(reason)
                    return .stop
                }
                try host.replacePartial(reason)
                restartedInPlace = reason
            } else if let reason = body.restartReason {
                host.publish(.restarted(reason))
            }
            guard body.writeOffset + body.overlap == output.sink.prefixLength else {
                throw DownloadError(.protocolViolation, "internal: the response does not start where the file ends")
            }
            let naming: PartialDownload.Naming
            do {
                naming = try output.name(
                    contentDisposition: head.headers["Content-Disposition"], url: url, overwrite: request.existingFile == .overwrite)
            } catch {
                throw DownloadError(error)
            }
            switch naming {
            case .named(let note):
                responseNote = note
            case .finishedInPlace:
                // The same request run again: its finished file is at the name. Nothing is written.
                decided = .finishedFileNamed
                return .stop
            }
            if let unverifiable = try digest.adoptServerDigest(from: head, output: output) {
                responseNote = [responseNote, unverifiable].compactMap { $0 }.joined(separator: "; ")
            }
            // The record must describe this version before any of its bytes reach the file.
            saves = output.begin(body, from: url)
        } catch {
            decided = .failed(error, retryable: false, retryAfter: nil)
            return .stop
        }
        self.body = body
        cursor = BodyCursor(plan: body, fileLength: output.sink.prefixLength, sizeLimit: request.maxSize)
        // Where this response's bytes start: the first report's speed is measured from here.
        host.bodyStarts(from: url)
        if let limiter = request.rateLimiter, Self.continuesByRange(body, head: head), output.partialFile != nil {
            grain = (TransferPacing.receiveBuffer(pace: limiter.bytesPerSecondNow), .now)
        }
        host.publish(
            .response(
                ResponseInfo(
                    status: head.status,
                    finalURL: url,
                    totalBytes: body.finalLength,
                    resumedFrom: body.writeOffset + body.overlap,
                    destination: output.destinationPath,
                    note: responseNote)))
        // The record's save and the segments' start run on the pool, this transfer parked until
        // they are done; a response that needs neither goes on at once.
        let startsSegments = host.segmentsMayStart(body, head: head, sent: sent)
        if saves || startsSegments {
            startPoolStep(saving: saves, accepting: startsSegments ? AcceptedBody(host: host, body: body, head: head, sent: sent) : nil)
        } else {
            host.bodyAccepted(body, head: head, sent: sent)
        }
        return .proceed
    }

    // MARK: the record, saved off this thread

    /// Hands the record's save (when `saving`), then the segments' start (`accepting`), to the
    /// blocking pool: this is the transport's thread (the event loop's, which every transfer
    /// shares), where a store that is slow or gone, or a sync, must hold up nothing. No more of
    /// the body reaches the file until they are done.
    private func startPoolStep(saving: Bool, accepting: AcceptedBody? = nil) {
        var save: (@Sendable () throws(StoreError) -> Void)?
        if saving && output.layout != nil {
            if let coordinator = segments.coordinator {
                // While segments run, only their checkpoint may write the record (it knows the holes).
                save = { () throws(StoreError) in try coordinator.checkpoint() }
            } else {
                // Nothing new was synced: the record claims no more than before.
                save = output.recordSaveJob(hash: digest.hash)
            }
        }
        guard save != nil || accepting != nil else { return }
        let job: @Sendable () throws(StoreError) -> Void = { [save] () throws(StoreError) in
            try save?()
            accepting?.tell()
        }
        parked.start(job)
    }

    /// Whether the body may go on: no record save is pending, or it ended (a failure decides the
    /// outcome) and what waited for it was done. `waiting`: block this thread until it ended (a
    /// transport thread of the transfer's own; the event loop asks `secondsBeforeNextChunk` first).
    private func recordSaved(waiting: Bool) -> Bool {
        switch parked.look(waiting: waiting) {
        case .clear:
            return true
        case .pending:
            return false
        case .ended(_, let failure?):
            // A store locked by another process, or a database away past its reconnection window,
            // is tried again with the next attempt: the bytes are all still there.
            let passing = failure.kind == .locked || failure.kind == .unavailable
            decided = .failed(DownloadError(.io, failure), retryable: passing, retryAfter: nil)
            return true
        case .ended(let stash, nil):
            if !stash.isEmpty { _ = stash.withUnsafeBytes { write($0) } }
            return true
        }
    }

    func secondsBeforeNextChunk() -> Double {
        // Woken as soon as the save ends (`TransferPacing.paceChanged`); the wait is a fallback.
        recordSaved(waiting: false) ? 0 : 0.25
    }

    /// After the transfer ended: waits (without a thread) for a pool step still pending, and
    /// writes what waited for it.
    func settleRecordSave() async {
        await parked.settle()
        _ = recordSaved(waiting: false)
    }

    // MARK: body

    func transferDidReceiveBody(_ chunk: UnsafeRawBufferPointer) -> TransferControl {
        _ = recordSaved(waiting: true)
        if decided != nil { return .stop }
        guard var cursor else {
            decided = .failed(DownloadError(.protocolViolation, "the server sent a body before a usable head"), retryable: true, retryAfter: nil)
            return .stop
        }
        let step = cursor.take(chunk.count, segmentBoundary: segments.coordinator?.mainEnd)
        self.cursor = cursor
        host.received(step.write.upperBound)
        if !step.compare.isEmpty {
            guard verifyOverlap(UnsafeRawBufferPointer(rebasing: chunk[step.compare]), at: step.compareAt, done: cursor.overlapDone) else { return .stop }
        }
        if !step.write.isEmpty {
            let bytes = UnsafeRawBufferPointer(rebasing: chunk[step.write])
            if parked.isPending {
                // The overlap was proven in this chunk: the rest waits for the record saying so.
                parked.keep(bytes)
            } else if !write(bytes) {
                return .stop
            }
        }
        switch step.stop {
        case .moreThanAnnounced(let expected):
            // Never write what the server did not announce.
            decided = .failed(
                DownloadError(.protocolViolation, "the server sent more bytes than the \(expected) it announced; the excess was not written"),
                retryable: true, retryAfter: nil)
        case .sizeLimit(let limit):
            // A body without a length stops at the limit; what came before it is kept.
            decided = .failed(
                tooLarge("the file grew past \(setting: .maxSize) \(Self.size(limit)); the \(Self.size(limit)) received are kept", needed: nil, limit: limit),
                retryable: false, retryAfter: nil)
        case .reachedSegments:
            reachedSegments = true
        case nil:
            break
        }
        segments.coordinator?.mainAdvanced(to: output.sink.prefixLength)
        watchFreeSpace()
        tick()
        return decided == nil && !reachedSegments ? .proceed : .stop
    }

    /// Writes body bytes to the file; false (with the outcome decided) when the write failed.
    private func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
        do {
            try output.sink.append(bytes)
        } catch {
            decided = .failed(ioFailure(error), retryable: false, retryAfter: nil)
            return false
        }
        digest.update(bytes)
        bodyBytesWritten += Int64(bytes.count)
        request.rateLimiter?.account(bytes.count)
        return true
    }

    /// Compares body bytes with the file at `offset`; false (with the outcome decided) on a
    /// mismatch. Once the whole overlap matched, an adopted file (or a partial from another URL)
    /// is proven to be a prefix of this version.
    private func verifyOverlap(_ bytes: UnsafeRawBufferPointer, at offset: Int64, done: Bool) -> Bool {
        do {
            // A direct output cannot be read back: nothing on it can be proven.
            guard let file = output.partialFile, try file.compare(bytes, at: offset) == .matches else {
                decided = overlapMismatch()
                return false
            }
        } catch {
            decided = .failed(DownloadError(.io, error), retryable: false, retryAfter: nil)
            return false
        }
        if done && output.markProven(for: request.url) {
            startPoolStep(saving: true)
        }
        return true
    }

    func overlapMismatch() -> AttemptOutcome {
        if output.record.isAdopted {
            return .restart(
                RestartReason(
                    .overlapMismatch,
                    "the existing file does not match the server's file: it is left as it is until the new download, started from byte 0 beside it, is complete"
                ))
        }
        return .restart(
            RestartReason(.overlapMismatch, "the bytes on disk do not match the server's file (no validator to check it by): restarting from byte 0"))
    }

    /// Progress events and checkpoints, as the host's pacer says.
    private func tick() {
        if let failure = host.tick() {
            decided = .failed(ioFailure(failure), retryable: false, retryAfter: nil)
        }
    }

    /// Whether other connections fetch the rest (the body finished at their part).
    var segmentsRunning: Bool { segments.isRunning }

    func transferShouldAbort() -> Bool {
        if control.shouldStop { return true }
        guard regrainDue() else { return false }
        // Asked by the event loop at least every 20 ms, a held-back transfer included: it ends
        // now, and the runner continues by range at once.
        decided = decided ?? .regrain
        return true
    }

    /// Whether the speed limit changed so much since this transfer started that its reads are out
    /// of step (`TransferPacing.readsOutOfStep`): after a second of it at least (a limit moved
    /// like a slider costs a request a second at most), with no other connection running (theirs
    /// end at their pieces' ends and read in the new grain after), and a megabyte left at least.
    private func regrainDue() -> Bool {
        guard let grain, let limiter = request.rateLimiter, decided == nil, !segments.isRunning, ContinuousClock.now - grain.since >= .seconds(1),
            let finalLength = body?.finalLength, finalLength - output.sink.prefixLength >= 1 << 20
        else { return false }
        return TransferPacing.readsOutOfStep(startedWith: grain.bytes, now: TransferPacing.receiveBuffer(pace: limiter.bytesPerSecondNow))
    }

    /// Whether a response can be ended and continued from where it stopped with a request for the
    /// rest, its version guarded (`If-Range`): ranges accepted, a validator, no encoding, a length.
    static func continuesByRange(_ body: BodyPlan, head: ResponseHead) -> Bool {
        (head.acceptsByteRanges || head.status == 206) && body.validators.canGuardResume && body.contentEncoding == nil && body.finalLength != nil
    }
}

/// A body accepted, to be told to the runner from the blocking pool (starting its segment
/// connections). `@unchecked Sendable`: the runner is confined to its download, and while this
/// is told the download's only transfer is parked, so nothing else touches the runner meanwhile;
/// the pool step's end (a lock) orders it before the transfer goes on.
private struct AcceptedBody: @unchecked Sendable {
    unowned let host: any BodyWriterHost
    let body: BodyPlan
    let head: ResponseHead
    let sent: TransferRequest

    func tell() {
        host.bodyAccepted(body, head: head, sent: sent)
    }
}
