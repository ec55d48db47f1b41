import CHaulSystem
import Foundation
import HaulChecksum
import HaulCore
import HaulEngine
import HaulStore

/// Runs one download to its end on a thread of its own: prepares the output, makes attempts,
/// follows redirects, retries, restarts, and finishes by renaming the verified file into place.
///
/// All state here is confined to that thread; the outside world talks to it through `RunControl`
/// and hears from it through the `EventHub`.
final class DownloadRunner {
    /// Restarts from byte 0 allowed in one run before the resource is declared too unstable.
    static let maxRestarts = 3

    let request: DownloadRequest
    /// Every request of the run goes through it; with cookies, through a `CookieTransport`.
    var transport: any HTTPTransport
    /// The run's cookies, when the request names a cookie file or jar.
    var cookies: CookieSession?
    /// Writing the jar failed once: the error that says so is on its way out; not tried again.
    var cookieJarFailed = false
    let hub: EventHub
    let control: RunControl
    /// Where the record of a layout lives.
    let records: @Sendable (OutputLayout) -> any ResumeRecordStore
    /// Called with the directory of a finished file instead of syncing it at once: a queue syncs
    /// each directory once for many files. Nil: sync the directory before reporting completion.
    let deferDirectorySync: (@Sendable (String) -> Void)?
    let clock = ContinuousClock()
    /// Bytes of the file on disk when this run started, for the completion.
    var resumedFrom: Int64 = 0
    /// The mirrors this run admitted, for the completion's account of their proof.
    let mirrorLedger = MirrorLedger()
    let startedAt: ContinuousClock.Instant

    /// The output, its files and its record: nil until `prepare` succeeds.
    var output: PartialDownload?
    var meter = ProgressMeter()
    /// Body bytes this run's own connection received (overlap included).
    var bytesTransferred: Int64 = 0
    /// Body bytes received by segment connections that have ended.
    var retiredSegmentBytes: Int64 = 0
    /// Body bytes received by every connection of this run: what speed, ETA and the summary count.
    var totalTransferred: Int64 { bytesTransferred + retiredSegmentBytes + (segments?.transferred ?? 0) }
    var finalURL: URL
    /// The URL requests start from: the request's, until `urlRefresher` replaces an expired one.
    var currentURL: URL
    /// Fresh URLs taken in one run at most; a refresher that keeps handing out failing URLs is stopped.
    static let maxRefreshes = 3
    /// When progress is published and checkpoints are taken.
    var pacer: CheckpointPacer
    /// The extra connections of a segmented download, while they run.
    var segments: SegmentCoordinator?
    /// Set after segment responses disagreed: the rest of this run uses one connection.
    var segmentingDisabled = false
    /// The digest of the bytes on disk so far, when a checksum was asked for.
    var hash: StreamingHash?
    /// The whole-file digest the server published, verified when no `checksum` was given.
    var serverDigest: ServerDigest?

    init(
        request: DownloadRequest,
        transport: any HTTPTransport,
        hub: EventHub,
        control: RunControl,
        records: @escaping @Sendable (OutputLayout) -> any ResumeRecordStore = { RecordFile(path: $0.recordPath) },
        deferDirectorySync: (@Sendable (String) -> Void)? = nil
    ) {
        self.request = request
        self.records = records
        self.deferDirectorySync = deferDirectorySync
        self.transport = transport
        self.hub = hub
        self.control = control
        self.startedAt = clock.now
        self.pacer = CheckpointPacer(progressInterval: request.progressInterval, checkpointInterval: request.checkpointInterval, start: 0)
        self.finalURL = request.url
        self.currentURL = request.url
    }

    /// How a run ended.
    enum Ending: Equatable {
        case completed(DownloadCompletion)
        case failed(DownloadError)
        case cancelled
        case paused
    }

    @discardableResult
    func run() -> Ending {
        // The lock is released before the terminal event, so whoever hears it can start another
        // run on the destination; this is the safety net for the other ways out.
        defer { releaseDestination() }
        do throws(DownloadError) {
            if request.rateLimiter?.isLimiting == true, !transport.hasBackpressure {
                // The limiter slows the handler, not the network: such a transport would queue the file in memory.
                throw DownloadError(.engine, "this engine cannot keep a speed limit: it reads on while a chunk is written (use \(setting: .curlEngine))")
            }
            try openCredentialFiles()
            let output = try prepare()
            self.output = output
            try startHash(output)
            // A segmented partial holds segments past its sequential prefix too.
            resumedFrom = output.bytesOnDisk
            // The URL is not the file's identity (a fresh signed link, a mirror, another port): the
            // partial is continued if the server's answer proves it the same file, by its
            // validators and an overlap compared byte for byte; otherwise it restarts.
            let note = output.partialFromAnotherURL.map {
                "the partial download came from another URL (\(Redaction.url($0))); it is continued only if this server's file proves to be the same"
            }
            hub.publish(
                .started(
                    DownloadStarted(
                        url: request.url,
                        destination: output.layout?.finalPath ?? (output.layout == nil ? output.sink.path : nil),
                        resumingFrom: resumedFrom, note: note)))
            if output.alreadyInPlace { return .completed(try finish(output)) }
            return try attemptLoop(output)
        } catch {
            var error = redacted(error)
            endSegments()
            if error.category == .cancelled {
                releaseDestination()
                // A cancelled download has no outcome left to report a jar that cannot be written.
                _ = cookieJarProblem()
                hub.publish(.cancelled)
                return .cancelled
            }
            if let problem = cookieJarProblem() {
                error = error.retold("\(error.text) (and \(problem.message))")
            }
            if let output, output.record.isAdopted {
                output.restoreAdoptedFile()
            } else if let output, output.removeIfEmpty() || output.partialIsGone {
                // Nothing was downloaded (no empty partial is left behind), or the partial was set
                // aside as proven bad: nothing is left to checkpoint.
            } else if let failure = checkpointOnExit() {
                error = error.retold("\(error.text) (and the checkpoint on the way out failed: \(failure.message))")
            }
            releaseDestination()
            error.url = error.url ?? request.url
            error.kept = keptData()
            hub.publish(.failed(error))
            return .failed(error)
        }
    }

    /// Makes attempts until the download completes, stops or fails for good: carries out what the
    /// `DownloadMachine` decides, and tells it what happened.
    private func attemptLoop(_ output: PartialDownload) throws(DownloadError) -> Ending {
        var machine = DownloadMachine(
            limits: DownloadMachine.Limits(
                retry: request.retry, maxRestarts: Self.maxRestarts, maxRefreshes: Self.maxRefreshes))
        var lastError: DownloadError?
        var action = nextAction(&machine, output)
        while true {
            switch action {
            case .send(let plan):
                let attempt = AttemptResult.run(self, plan: plan, output: output)
                lastError = attempt.error.map(redacted)
                if let reason = attempt.restartedInPlace, let error = lastError {
                    // Said with the failure: every retry of such a server starts from byte 0 again.
                    lastError = error.retold("\(error.text) (\(reason.message))")
                }
                noteStopRequest(&machine)
                action = machine.attemptEnded(attempt.end, restartedInPlace: attempt.restartedInPlace, canRefresh: canRefresh(output))
                continue
            case .joinSegments:
                let joined = try joinSegments(output)
                noteStopRequest(&machine)
                if let then = machine.segmentsJoined(joined) {
                    action = then
                    continue
                }
            case .finish:
                return .completed(try finish(output))
            case .restartFromZero(let reason):
                try discardBytes(output, reason: reason)
            case .retry(let attempt, let maxRetries, let delay):
                try checkpointOrFail()
                hub.publish(.retrying(RetryInfo(attempt: attempt, maxRetries: maxRetries, delay: delay, reason: lastError?.message ?? "retrying")))
                control.sleep(seconds: delay)
            case .refreshURL(let status, let attempt, let maxRefreshes):
                let fresh = request.urlRefresher.flatMap { [currentURL] refresh in Self.awaited { await refresh(currentURL, status) } }
                if let fresh {
                    currentURL = fresh
                    hub.publish(
                        .retrying(
                            RetryInfo(
                                attempt: attempt, maxRetries: maxRefreshes, delay: 0,
                                reason: "\(lastError?.message ?? "HTTP \(status)"); continuing from a fresh URL")))
                }
                if let then = machine.refreshed(fresh != nil) {
                    action = then
                    continue
                }
            case .stop(let stop):
                return try self.stop(output, stop)
            case .giveUp(.lastFailure):
                throw lastError ?? DownloadError(.network, "the download failed")
            case .giveUp(.tooManyRestarts(let reason)):
                throw DownloadError(.protocolViolation, "gave up after \(Self.maxRestarts) restarts: \(reason.message)")
            }
            action = nextAction(&machine, output)
        }
    }

    /// The machine's decision before an attempt, from the bytes on disk and their record.
    private func nextAction(_ machine: inout DownloadMachine, _ output: PartialDownload) -> DownloadMachine.Action {
        noteStopRequest(&machine)
        return machine.next(target: request.target, partial: output.localPartial(for: request.url))
    }

    /// Passes a pause or cancel from the API on to the machine.
    private func noteStopRequest(_ machine: inout DownloadMachine) {
        if let stop = control.stopRequest { machine.requestStop(stop) }
    }

    /// Whether a 401/403/410 may be answered with a fresh URL: a refresher exists and there is a
    /// download in progress to continue.
    private func canRefresh(_ output: PartialDownload) -> Bool {
        request.urlRefresher != nil && (output.sink.length > 0 || output.record.validators != .none)
    }

    /// Pause or cancel, as requested through the API.
    private func stop(_ output: PartialDownload, _ stop: DownloadMachine.Stop) throws(DownloadError) -> Ending {
        endSegments()
        switch stop {
        case .cancelAndDelete:
            output.deleteAll()
            throw DownloadError(.cancelled, "the download was cancelled and its partial data deleted")
        case .cancel:
            try checkpointOrFail()
            throw DownloadError(.cancelled, "the download was cancelled; its partial data is kept")
        case .pause:
            try checkpointOrFail()
            try saveCookieJar()
            releaseDestination()
            hub.publish(.paused(currentProgress(output)))
            return .paused
        }
    }

    /// Seconds since the run started, for the meter and the pacer.
    func elapsedSeconds() -> Double {
        let elapsed = clock.now - startedAt
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    func currentProgress(_ output: PartialDownload) -> DownloadProgress {
        let total = output.record.finalLength
        let bytes = output.sink.length + (segments?.segmentBytes ?? 0)
        let remaining = total.map { max(0, $0 - bytes) }
        var progress = DownloadProgress(
            bytes: bytes,
            totalBytes: total,
            bytesPerSecond: meter.bytesPerSecond,
            secondsLeft: meter.secondsLeft(remaining: remaining))
        progress.segments = segments.map { [Segment(begin: 0, next: output.sink.length, end: $0.mainEnd)] + $0.segments }
        return progress
    }
}

extension DownloadRequest {
    /// The range as recorded, so a run with another range does not reuse the partial.
    var targetDescription: String? {
        if case .range(let spec) = target { return spec.headerValue }
        return nil
    }
}
