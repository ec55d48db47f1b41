import Foundation
import HaulCore
import HaulEngine
import HaulStore

/// Receives one response for a runner: judges its head, proves the overlap, writes the body,
/// publishes progress and takes checkpoints. Runs on the runner's thread, inside the transport.
final class BodyWriter: TransferHandler {
    let runner: DownloadRunner
    let plan: RequestPlan
    let output: PreparedOutput
    /// The request this response answers (the final hop of its redirect chain).
    let sent: TransferRequest
    var url: URL { sent.url }

    /// A redirect to follow; the runner makes the next request.
    private(set) var redirectHead: ResponseHead?
    /// An outcome the head or the body already decided.
    var decided: AttemptOutcome?
    var body: BodyPlan?
    /// Body bytes received (overlap included) and written.
    private var received: Int64 = 0
    private(set) var bodyBytesWritten: Int64 = 0
    /// When `bodyBytesWritten` reaches this, the free space is checked again.
    var nextSpaceCheck: Int64 = 0
    /// Overlap bytes still to compare with the partial file.
    var overlapLeft: Int64 = 0
    private var overlapPosition: Int64 = 0
    private var nextProgress: ContinuousClock.Instant
    /// The sequential connection of a segmented download reached the part other connections fetch.
    var reachedSegments = false

    init(runner: DownloadRunner, plan: RequestPlan, output: PreparedOutput, sent: TransferRequest) {
        self.runner = runner
        self.plan = plan
        self.output = output
        self.sent = sent
        // The first progress event comes after one interval: a small file finishes before it and
        // reports its progress once, at the end.
        self.nextProgress = runner.clock.now + .milliseconds(Int64(runner.request.progressInterval * 1000))
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
        do throws(DownloadError) {
            try checkFreeSpace(body)
            if body.writeOffset == 0 && output.sink.length > 0 && body.overlap == 0 {
                try runner.discardBytes(output, reason: body.restartReason
                    ?? RestartReason(.serverIgnoredRange, "the server sent the whole file again: restarting from byte 0"))
            } else if let reason = body.restartReason {
                runner.hub.publish(.restarted(reason))
            }
            guard body.writeOffset + body.overlap == output.sink.length else {
                throw DownloadError(.protocolViolation, "internal: the response does not start where the file ends")
            }
            try name(from: head)
            runner.record.finalURL = url.absoluteString
            runner.record.finishedLength = nil
            runner.record.validators = body.validators
            runner.record.totalLength = body.totalLength
            runner.record.finalLength = body.finalLength
            runner.record.contentEncoding = body.contentEncoding
            runner.record.resourceStart = body.resourceStart
            runner.finalURL = url
            // The record must describe this version before any of its bytes reach the file.
            let small = body.expectedBodyLength.map { $0 <= DownloadRunner.recordlessBodyLimit } ?? false
            if runner.recordStored || !small || body.writeOffset > 0 {
                try saveRecord()
            }
        } catch {
            decided = .failed(error, retryable: false, retryAfter: nil)
            return .stop
        }
        self.body = body
        overlapLeft = body.overlap
        overlapPosition = body.writeOffset
        runner.hub.publish(.response(ResponseInfo(
            status: head.status,
            finalURL: url,
            totalBytes: body.finalLength,
            resumedFrom: body.writeOffset + body.overlap,
            destination: destinationPath)))
        runner.startSegmentsIfUseful(body, head, sent: sent, output: output)
        return .proceed
    }

    /// Picks the file name for a download into a directory and refuses to replace an existing file.
    private func name(from head: ResponseHead) throws(DownloadError) {
        guard let layout = output.layout, layout.finalPath == nil else { return }
        let name = runner.record.fileName
            ?? FileNameSanitizer.destinationName(contentDisposition: head.headers["Content-Disposition"], url: url)
        let path = layout.path(forName: name)
        if DestinationKind.of(path) == .symlink {
            throw DownloadError.symlinkRefusal(path)
        }
        if runner.record.fileName == nil, runner.request.existingFile != .overwrite, !runner.mayOwnExistingFile,
           DestinationKind.of(path) != .none {
            throw DownloadError(.destinationExists, "\(path) already exists; use --force to replace it or -c to continue it")
        }
        runner.record.fileName = name
    }

    private var destinationPath: String {
        if let layout = output.layout {
            return layout.finalPath ?? runner.record.fileName.map(layout.path(forName:)) ?? layout.partialPath
        }
        return output.sink.path
    }

    private func saveRecord() throws(DownloadError) {
        guard let layout = output.layout else { return }
        if let segments = runner.segments {
            // While segments run, only their checkpoint may write the record (it knows the holes).
            do {
                try segments.checkpoint()
            } catch {
                throw DownloadError(.io, error.message)
            }
            return
        }
        do {
            // Nothing new was synced: the record claims no more than before.
            try runner.saveRecord(layout, syncedLength: min(runner.record.syncedLength, output.sink.length))
        } catch {
            throw DownloadError(.io, error.message)
        }
    }

    // MARK: body

    func transferDidReceiveBody(_ chunk: UnsafeRawBufferPointer) -> TransferControl {
        guard let body else {
            decided = .failed(DownloadError(.protocolViolation, "the server sent a body before a usable head"), retryable: true, retryAfter: nil)
            return .stop
        }
        var bytes = chunk
        if let expected = body.expectedBodyLength, received + Int64(bytes.count) > expected {
            // Never write what the server did not announce.
            let allowed = Int(max(0, expected - received))
            bytes = UnsafeRawBufferPointer(rebasing: chunk[0..<allowed])
            decided = .failed(
                DownloadError(.protocolViolation, "the server sent more bytes than the \(expected) it announced; the excess was not written"),
                retryable: true, retryAfter: nil)
        }
        if let maxSize = runner.request.maxSize, output.sink.length + Int64(bytes.count) - overlapLeft > maxSize {
            // A body without a length stops at the limit; what came before it is kept.
            let allowed = Int(max(0, maxSize - output.sink.length + overlapLeft))
            bytes = UnsafeRawBufferPointer(rebasing: bytes[0..<min(allowed, bytes.count)])
            decided = .failed(
                DownloadError(.tooLarge, "the file grew past --max-size \(Self.size(maxSize)); the \(Self.size(maxSize)) received are kept"),
                retryable: false, retryAfter: nil)
        }
        if let segments = runner.segments, overlapLeft == 0 {
            let room = max(0, segments.mainEnd - output.sink.length)
            if Int64(bytes.count) >= room {
                bytes = UnsafeRawBufferPointer(rebasing: bytes[0..<Int(room)])
                reachedSegments = true
            }
        }
        received += Int64(bytes.count)
        runner.bytesTransferred += Int64(bytes.count)
        if overlapLeft > 0 {
            guard let rest = verifyOverlap(bytes) else { return .stop }
            bytes = rest
        }
        if !bytes.isEmpty {
            do {
                try output.sink.append(bytes)
            } catch {
                decided = .failed(DownloadError(.io, ioMessage(error)), retryable: false, retryAfter: nil)
                return .stop
            }
            runner.hash?.update(bytes)
            bodyBytesWritten += Int64(bytes.count)
            runner.request.rateLimiter?.take(bytes.count) { runner.control.shouldStop }
        }
        runner.segments?.mainAdvanced(to: output.sink.length)
        watchFreeSpace()
        tick()
        if reachedSegments { return .stop }
        return decided == nil ? .proceed : .stop
    }

    /// Compares the leading body bytes with the file; returns the bytes after the overlap, or nil on a mismatch.
    private func verifyOverlap(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        let count = Int(min(Int64(bytes.count), overlapLeft))
        let onDisk: [UInt8]?
        do {
            onDisk = try output.sink.read(at: overlapPosition, count: count)
        } catch {
            decided = .failed(DownloadError(.io, error.message), retryable: false, retryAfter: nil)
            return nil
        }
        guard let onDisk, onDisk.count == count, onDisk.elementsEqual(bytes[0..<count]) else {
            decided = overlapMismatch()
            return nil
        }
        overlapLeft -= Int64(count)
        overlapPosition += Int64(count)
        if overlapLeft == 0 && (runner.record.isAdopted || runner.partialNeedsProof) {
            // The adopted file (or a partial from another URL) is now proven to be a prefix of
            // this version.
            runner.record.isAdopted = false
            runner.record.originalURL = runner.request.url.absoluteString
            do throws(DownloadError) {
                try saveRecord()
            } catch {
                decided = .failed(error, retryable: false, retryAfter: nil)
                return nil
            }
        }
        return UnsafeRawBufferPointer(rebasing: bytes[count...])
    }

    func overlapMismatch() -> AttemptOutcome {
        if runner.record.isAdopted {
            return .restart(RestartReason(.overlapMismatch, "the existing file does not match the server's file: it is left as it is until the new download, started from byte 0 beside it, is complete"))
        }
        return .restart(RestartReason(.overlapMismatch, "the bytes on disk do not match the server's file (no validator to check it by): restarting from byte 0"))
    }

    /// Progress events and checkpoints, both paced by the clock.
    private func tick() {
        let now = runner.clock.now
        guard now >= nextProgress else { return }
        nextProgress = now + .milliseconds(Int64(runner.request.progressInterval * 1000))
        let elapsed = now - runner.startedAt
        runner.meter.record(bytes: runner.bytesTransferred, at: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        runner.hub.publish(.progress(runner.currentProgress(output)))
        if now - runner.lastCheckpoint >= .milliseconds(Int64(runner.request.checkpointInterval * 1000)) {
            do {
                try runner.checkpoint()
            } catch {
                decided = .failed(DownloadError(.io, ioMessage(error)), retryable: false, retryAfter: nil)
            }
        }
    }

    func transferShouldAbort() -> Bool {
        runner.control.shouldStop
    }
}
