import Foundation
import HaulCore
import HaulEngine
import HaulStore

/// Runs one download to its end as a task: a loop over what the `DownloadMachine` decides, carried
/// out by the parts that own each kind of state: the file keeper (`PartialDownload`), the digest
/// (`DigestCheck`), the extra connections (`SegmentDriver`), the credential files and their
/// transport (`RunCredentials`), the figures (`RunFigures`). No thread is its own: its transfers
/// go through the transport's event loop (`transfer`), its blocking steps (opening, syncing,
/// committing) to `BlockingWork`'s small pool, and it is confined to its task (one step at a
/// time). The outside world talks to it through `RunControl`, hears it through `EventHub`.
final class DownloadRunner {
    /// Restarts from byte 0 allowed in one run before the resource is declared too unstable.
    static let maxRestarts = 3
    /// Fresh URLs taken in one run at most; a refresher that keeps handing out failing URLs is stopped.
    static let maxRefreshes = 3

    /// What the run was given: the request, its event hub and control, where records live.
    private let setup: RunSetup
    private let credentials: RunCredentials
    private let digest: DigestCheck
    private let segments: SegmentDriver
    private let figures: RunFigures
    /// The output, its files and its record: nil until it is opened.
    private var output: PartialDownload?
    /// The URL requests start from (the request's, until `urlRefresher` replaces an expired one),
    /// and the one that answered last, after redirects.
    private var urls: (current: URL, final: URL)
    /// What the run decides: the next action, and every second chance counted.
    private var machine: DownloadMachine

    init(
        request: DownloadRequest, transport: any HTTPTransport, hub: EventHub, control: RunControl,
        records: @escaping @Sendable (OutputLayout) -> any ResumeRecordStore = { RecordFile(path: $0.recordPath) },
        finishGroups: FinishGroups? = nil, item: Int64? = nil, transfersEnded: (@Sendable () -> Void)? = nil
    ) {
        var request = request
        // The run draws from its limit through a limiter of its own (with no limit of its own):
        // the event loop shares a limit between downloads by their limiters (`FairTurns`), so
        // two downloads under one limit get about half each whatever their connections. The
        // download's own limit, if any, is kept within the request's limiter.
        let own = request.options.bytesPerSecond.flatMap { $0 > 0 ? RateLimiter(bytesPerSecond: $0, within: request.rateLimiter) : nil }
        request.rateLimiter = (own ?? request.rateLimiter).map { RateLimiter(bytesPerSecond: 0, within: $0) }
        let ledger = MirrorLedger()
        setup = RunSetup(
            request: request, hub: hub, control: control, records: records, finishGroups: finishGroups, item: item,
            transfersEnded: transfersEnded, mirrors: ledger)
        credentials = RunCredentials(request, transport: transport)
        digest = DigestCheck(request)
        let figures = RunFigures(request)
        self.figures = figures
        segments = SegmentDriver(
            request, control: control, figures: figures, report: { hub.publish(.progress($0)) },
            onMirror: { note in
                ledger.note(note)
                hub.publish(.mirror(note))
            })
        urls = (request.url, request.url)
        machine = DownloadMachine(
            limits: DownloadMachine.Limits(retry: request.retry, maxRestarts: Self.maxRestarts, maxRefreshes: Self.maxRefreshes))
    }

    private var request: DownloadRequest { setup.request }

    @discardableResult
    func run() async -> Ending {
        // The lock is released before the terminal event, so whoever hears it can start another
        // run on the destination; this is the safety net for the other ways out.
        defer { output?.release() }
        // A pause or cancel wakes the transport, so a transfer waiting for bytes ends at once.
        let transport = credentials.transport
        let wake = setup.control.observe { transport.wake() }
        defer { setup.control.stopObserving(wake) }
        do throws(DownloadError) {
            if request.rateLimiter?.isLimiting == true, !credentials.transport.hasBackpressure {
                // The limiter slows the handler, not the network: such a transport would queue the file in memory.
                throw DownloadError(.engine, "this engine cannot keep a speed limit: it reads on while a chunk is written (use \(setting: .curlEngine))")
            }
            // One trip to the pool: the output is opened, then the digest starts from what is on
            // disk (reading it back when a partial is resumed). The output is this run's, to
            // release, even if the digest cannot start.
            let output = try await BlockingWork.step { () throws(DownloadError) -> PartialDownload in
                let output = try open()
                self.output = output
                try digest.start(output)
                return output
            }
            // A segmented partial holds segments past its sequential prefix too.
            figures.resumedFrom = output.bytesOnDisk
            setup.hub.publish(.started(setup.started(output)))
            if output.alreadyInPlace { return .completed(try await finish(output)) }
            return try await attemptLoop(output)
        } catch {
            let failure = error
            return await BlockingWork.run {
                RunExit(setup: setup, credentials: credentials, segments: segments, output: output)
                    .failed(failure, currentURL: urls.current, checkpoint: checkpointOnExit)
            }
        }
    }

    /// Opens the credential files and the output: the file keeper decides what to do with what
    /// an earlier run left.
    private func open() throws(DownloadError) -> PartialDownload {
        try credentials.open()
        do {
            return try PartialDownload.open(request.outputRequest, records: setup.records)
        } catch {
            throw DownloadError(error)
        }
    }

    /// Makes attempts until the download completes, stops or fails for good: carries out what the
    /// `DownloadMachine` decides, and tells it what happened.
    private func attemptLoop(_ output: PartialDownload) async throws(DownloadError) -> Ending {
        var lastError: DownloadError?
        var action = nextAction(output)
        while true {
            switch action {
            case .send(let plan):
                // The connection's figures come at the interval while it fetches, whether or not it writes.
                let hub = setup.hub
                figures.connectionStarts()
                let reporter = figures.reportWhileConnected { hub.publish(.progress($0)) }
                let attempt = await send(plan, output)
                reporter.stop()
                lastError = attempt.error.map { setup.redaction.redacted($0, currentURL: urls.current) }
                if let reason = attempt.restartedInPlace, let error = lastError {
                    // Said with the failure: every retry of such a server starts from byte 0 again.
                    lastError = error.retold("\(error.text) (\(reason.message))")
                }
                noteStopRequest()
                action = machine.attemptEnded(attempt.end, canRefresh: canRefresh(output))
                continue
            case .joinSegments:
                // The wait lasts as long as the other connections run: a task's, holding no
                // thread; what follows (syncs, a cut-back) runs on the pool.
                await segments.waitForOthers()
                let joined = try await BlockingWork.step { () throws(DownloadError) in
                    try segments.join(output) { reach throws(DownloadError) in
                        try digest.catchUp(from: output, upTo: reach)
                        try checkpointOrFail()
                    }
                }
                noteStopRequest()
                if let then = machine.segmentsJoined(joined) {
                    action = then
                    continue
                }
            case .finish:
                return .completed(try await finish(output))
            case .restartFromZero(let reason):
                try await BlockingWork.step { () throws(DownloadError) in try discardBytes(reason) }
            case .retry(let attempt, let maxRetries, let delay):
                try await BlockingWork.step { () throws(DownloadError) in try checkpointOrFail() }
                setup.hub.publish(.retrying(RetryInfo(attempt: attempt, maxRetries: maxRetries, delay: delay, reason: lastError?.message ?? "retrying")))
                await setup.control.pause(seconds: delay)
            case .refreshURL(let status, let attempt, let maxRefreshes):
                var fresh: URL?
                if let refresh = request.urlRefresher { fresh = await refresh(urls.current, status) }
                if let fresh {
                    urls.current = fresh
                    let reason = "\(lastError?.message ?? "HTTP \(status)"); continuing from a fresh URL"
                    setup.hub.publish(.retrying(RetryInfo(attempt: attempt, maxRetries: maxRefreshes, delay: 0, reason: reason)))
                }
                if let then = machine.refreshed(fresh != nil) {
                    action = then
                    continue
                }
            case .stop(let stop):
                return try await BlockingWork.step { () throws(DownloadError) in
                    try RunExit(setup: setup, credentials: credentials, segments: segments, output: output)
                        .stop(stop, progress: { figures.progress(output, segments: segments.coordinator, connected: false) }, checkpoint: checkpointOrFail)
                }
            case .planAgain:
                break
            case .giveUp(.lastFailure):
                throw lastError ?? DownloadError(.network, "the download failed")
            case .giveUp(.tooManyRestarts(let reason)):
                throw DownloadError(.protocolViolation, "gave up after \(Self.maxRestarts) restarts: \(reason.message)")
            }
            action = nextAction(output)
        }
    }

    /// One attempt: the planned request, its redirects, and a body writer for its response.
    private func send(_ plan: RequestPlan, _ output: PartialDownload) async -> AttemptResult {
        // A speed limit (`haul serve` may set one at any time) is kept by the transport, which
        // holds chunks back without blocking (`TransferPacer`): the handler never waits.
        await AttemptResult.run(
            request.transferRequest(to: urls.current).asking(for: plan), policy: setup.redirects, transport: credentials.transport,
            options: request.transfer.paced(by: request.rateLimiter), handlerMayBlock: false
        ) { sent in
            BodyWriter(
                host: self, request: request, digest: digest, segments: segments, control: setup.control, plan: plan, output: output, sent: sent)
        }
    }

    /// The machine's decision before an attempt, from the bytes on disk and their record.
    private func nextAction(_ output: PartialDownload) -> DownloadMachine.Action {
        noteStopRequest()
        return machine.next(target: request.target, partial: output.localPartial(for: request.url))
    }

    /// Passes a pause or cancel on to the machine.
    private func noteStopRequest() {
        if let stop = setup.control.stopRequest { machine.requestStop(stop) }
    }

    /// Whether a 401/403/410 may be answered with a fresh URL: a refresher exists and there is a
    /// download in progress to continue.
    private func canRefresh(_ output: PartialDownload) -> Bool {
        request.urlRefresher != nil && (output.sink.prefixLength > 0 || output.record.validators != .none)
    }

    /// Verifies the digest, has the file put in place in the durability order (with the group of
    /// a queue run's downloads finishing meanwhile), and reports the completion. The blocking
    /// steps run on `BlockingWork`'s pool.
    private func finish(_ output: PartialDownload) async throws(DownloadError) -> DownloadCompletion {
        var output = output
        if output.namedFinishedFile != nil {
            output = try await BlockingWork.step { () throws(DownloadError) in try takeNamedFinishedFile(output) }
        }
        setup.transfersEnded?()
        // Without a digest to check or a cookie jar to write there is nothing to wait for here.
        var verified: String?
        if digest.hasDigestToVerify || credentials.writesJar {
            verified = try await BlockingWork.step { () throws(DownloadError) in
                // Before the file is put in place: a jar that cannot be written fails the download
                // with its bytes kept, and the next run finishes it.
                try credentials.saveJar()
                return try digest.verify(output, checkpointOnExit: checkpointOnExit)
            }
        }
        if request.options.usesRemoteTime, !output.alreadyInPlace, let stated = output.record.validators.lastModified.flatMap(HTTPDate.parse) {
            // Before the file is put in place: the finished mark then records the identity the
            // file keeps (a time set after it would make the next run take the file for another's).
            output.sink.setModificationTime(stated)
        }
        let member = FinishGroup.Member(output, replacing: request.existingFile == .overwrite, hash: digest.hash)
        let path = try await FinishGroups.place(member, with: setup.finishGroups, item: setup.item).mapError { DownloadError($0) }.get()
        // The last report's speed covers every byte up to the end.
        figures.sample()
        setup.hub.publish(.progress(figures.progress(output, segments: segments.coordinator, connected: false, final: true)))
        let completion = DownloadCompletion(
            path: path, bytes: output.sink.prefixLength, bytesTransferred: totalTransferred, seconds: figures.elapsedSeconds,
            resumedFrom: figures.resumedFrom, finalURL: urls.final, digest: verified,
            mirrorProof: setup.mirrors.proof(digest: verified, verified: digest.expected?.expectedHex != nil), alreadyComplete: output.alreadyInPlace)
        setup.hub.publish(.completed(completion))
        return completion
    }

    /// The response named this request's finished file (`AttemptOutcome.finishedFileNamed`): the
    /// run goes on with that file, already in place, as its output, its digest read from it.
    private func takeNamedFinishedFile(_ named: PartialDownload) throws(DownloadError) -> PartialDownload {
        let taken: PartialDownload
        do {
            taken = try named.takingNamedFinishedFile()
        } catch {
            throw DownloadError(error)
        }
        output = taken
        figures.resumedFrom = 0
        digest.restart()
        try digest.start(taken)
        return taken
    }

    /// Gives up the bytes on disk for a new version: the segments end, the file keeper truncates
    /// (or puts an adopted file back), and the digest starts over.
    private func discardBytes(_ reason: RestartReason) throws(DownloadError) {
        segments.stop()
        segments.retire(into: output)
        var reason = reason
        reason.discardedBytes = output?.bytesOnDisk ?? 0
        // What was on disk when the run began is gone: none of the file is resumed any more.
        figures.resumedFrom = 0
        do {
            try output?.discard(because: reason.message, restartingFrom: request.url)
        } catch {
            throw DownloadError(error)
        }
        digest.restart()
        setup.hub.publish(.restarted(reason))
    }

    /// Makes the bytes so far durable and records them: data first, then the record that claims it.
    private func checkpoint() throws(StoreError) {
        if try segments.checkpoint(output, hash: digest.hash) { figures.checkpointed() }
    }

    /// A checkpoint that must succeed (a pause, a retry): its failure ends the run.
    private func checkpointOrFail() throws(DownloadError) {
        do {
            try checkpoint()
        } catch {
            throw DownloadError(.io, error)
        }
    }

    /// A checkpoint on the way out of a failure; its own failure is returned, never hiding the first error.
    private func checkpointOnExit() -> StoreError? {
        do {
            try checkpoint()
            return nil
        } catch {
            return error
        }
    }

    /// Body bytes received by every connection of this run: what speed, ETA and the summary count.
    private var totalTransferred: Int64 { figures.bytesTransferred }
}

extension DownloadRunner: BodyWriterHost {
    func replacePartial(_ reason: RestartReason) throws(DownloadError) {
        // Counted where every restart is: the machine.
        machine.responseReplacesPartial(reason)
        try discardBytes(reason)
    }

    func publish(_ event: DownloadEvent) {
        setup.hub.publish(event)
    }

    func bodyStarts(from url: URL) {
        urls.final = url
        figures.sample()
    }

    func segmentsMayStart(_ body: BodyPlan, head: ResponseHead, sent: TransferRequest) -> Bool {
        guard let output else { return false }
        return segments.mayStart(body, head, sent: sent, output: output)
    }

    func bodyAccepted(_ body: BodyPlan, head: ResponseHead, sent: TransferRequest) {
        guard let output else { return }
        segments.startIfUseful(body, head, sent: sent, output: output, transport: credentials.transport, wholeFileDigest: digest.wholeFileDigest)
    }

    func received(_ count: Int) {
        figures.received(count)
    }

    func tick() -> StoreError? {
        // While other connections run, their reporter publishes the whole download's progress
        // (this connection may be held back by a speed limit while they write), and their
        // monitor checkpoints, every second, on the pool: a sync here, on the event loop's
        // thread, would hold up every connection (their socket buffers fill, and what they hold
        // is lost to a kill). Alone, this connection's reporter publishes what it wrote.
        guard let output, segments.coordinator == nil else { return nil }
        guard figures.wrote(bytes: output.sink.prefixLength, total: output.record.finalLength) else { return nil }
        // Standard output keeps no record: nothing to checkpoint.
        guard output.layout != nil else { return nil }
        // Called on the transport's event loop: the sync and the save run on the pool, so no
        // other transfer waits for this file's disk.
        figures.checkpointed()
        return output.checkpointInBackground(hash: digest.hash, on: BlockingWork.submit)
    }
}
