import Foundation
import HaulChecksum
import HaulCore
import HaulEngine
import HaulStore

/// The extra connections of one download, from the first accepted response to the join: starts a
/// `SegmentCoordinator` when `SegmentEligibility` says so, stops it, waits for it, and says how it
/// ended. Confined to the download's run (the coordinator's connection tasks talk to it through
/// its lock).
final class SegmentDriver {
    private let request: DownloadRequest
    private let control: RunControl
    private let onMirror: @Sendable (MirrorNote) -> Void
    /// The connections while they run.
    private(set) var coordinator: SegmentCoordinator?
    /// Set after segment responses disagreed: the rest of this run uses one connection.
    private var disabled = false
    /// The run's figures, which every connection feeds, and how a progress report is published.
    private let figures: RunFigures
    private let report: @Sendable (DownloadProgress) -> Void

    init(
        _ request: DownloadRequest, control: RunControl, figures: RunFigures, report: @escaping @Sendable (DownloadProgress) -> Void,
        onMirror: @escaping @Sendable (MirrorNote) -> Void
    ) {
        self.request = request
        self.control = control
        self.figures = figures
        self.report = report
        self.onMirror = onMirror
    }

    /// Whether segment connections are running.
    var isRunning: Bool { coordinator != nil }

    /// After the first response of a download is accepted (`sent` on `transport`, `wholeFileDigest`
    /// proving mirrors): fetch the rest over several connections when it is worth it.
    /// Whether `startIfUseful` would start segments for this response: a pure look, cheap enough
    /// for the event loop's thread (starting them opens and syncs files, so it runs on the pool).
    func mayStart(_ body: BodyPlan, _ head: ResponseHead, sent: TransferRequest, output: PartialDownload) -> Bool {
        eligibility(body, head, sent: sent, output: output).helpers != nil && output.partialFile != nil && body.totalLength != nil
    }

    private func eligibility(_ body: BodyPlan, _ head: ResponseHead, sent: TransferRequest, output: PartialDownload) -> SegmentEligibility {
        // A host that refused an extra connection of this download (this run or an earlier one)
        // is never asked for more than it took.
        let caps = output.record.connectionCaps ?? []
        let cap = sent.url.host.flatMap { caps.cap(for: $0) }
        let connections = cap.map { min(request.connections ?? SegmentEligibility.adaptiveConnectionLimit, $0) } ?? request.connections
        return SegmentEligibility(
            body: body, status: head.status, acceptsByteRanges: head.acceptsByteRanges, wholeResource: request.target == .whole,
            resumableOutput: output.partialFile != nil, bytesOnDisk: output.sink.prefixLength, resumesSegments: output.record.segments != nil,
            segmentsRunningOrDisabled: coordinator != nil || disabled, connections: connections, hasHost: sent.url.host != nil)
    }

    func startIfUseful(
        _ body: BodyPlan, _ head: ResponseHead, sent: TransferRequest, output: PartialDownload, transport: any HTTPTransport,
        wholeFileDigest: Checksum?
    ) {
        guard let helpers = eligibility(body, head, sent: sent, output: output).helpers, let file = output.partialFile, let host = sent.url.host,
            let total = body.totalLength, let saveSegments = output.segmentSaver()
        else { return }
        var setup = SegmentCoordinator.Setup(
            request: sent, transfer: request.transfer, validators: body.validators, total: total,
            host: host, maxHelpers: helpers, adaptive: request.connections == nil, retry: request.retry,
            rateLimiter: request.rateLimiter)
        setup.mirrors = mirrorRequests(askedLike: sent)
        setup.redirects = RedirectPolicy(maxRedirects: request.maxRedirects, allowsDowngrade: request.allowsHTTPRedirect)
        setup.wholeFileDigest = wholeFileDigest
        setup.allowsUnverifiedMirrors = request.allowsUnverifiedMirrors
        setup.connectionCaps = output.record.connectionCaps ?? []
        let coordinator = SegmentCoordinator(
            setup: setup, file: file, transport: transport, control: control,
            mainNext: output.sink.prefixLength, resumed: output.record.segments,
            progressMap: output.segmentProgressMap(prefix: output.sink.prefixLength, segments: output.record.segments ?? []),
            figures: figures, report: report, onMirror: onMirror, saveRecord: saveSegments)
        self.coordinator = coordinator
        coordinator.start()
    }

    /// The mirrors' requests, each built from its own URL alone (`TransferRequest.mirror`). Mirrors
    /// serve a plain GET: a download that sends a body or another method has none.
    private func mirrorRequests(askedLike sent: TransferRequest) -> [TransferRequest] {
        guard sent.method == "GET", sent.body == nil else { return [] }
        return request.mirrors.filter { $0.host != nil }.map { TransferRequest.mirror($0, askedLike: sent) }
    }

    /// Forgets the coordinator once its connections ended (the bytes they moved stay in the run's
    /// figures, the hosts that refused a connection in `output`'s record); its progress map goes
    /// with it (the record no longer has segments).
    func retire(into output: PartialDownload?) {
        if let coordinator {
            output?.rememberConnectionCaps(coordinator.connectionCaps)
            coordinator.progressMap?.remove()
        }
        coordinator = nil
    }

    /// Makes the bytes so far durable and records them: the segment connections' checkpoint while
    /// they run (only it knows the holes), else the file keeper's. False when there was nothing to
    /// checkpoint (a direct output).
    func checkpoint(_ output: PartialDownload?, hash: StreamingHash?) throws(StoreError) -> Bool {
        if let coordinator {
            try coordinator.checkpoint()
            return true
        }
        guard let output, output.layout != nil else { return false }
        try output.checkpoint(hash: hash)
        return true
    }

    /// Stops the extra connections (their progress stays with the coordinator for a checkpoint).
    func stop() {
        coordinator?.stopAndWait()
    }

    /// Waits, holding no thread, until the other connections have ended (or failed, or a stop
    /// came): `join` then has nothing long left to wait for.
    func waitForOthers() async {
        await coordinator?.waitForHelpersToEnd()
    }

    /// The runner's connection reached its part: wait for the others and say how they ended. A
    /// segmented download that cannot complete is cut back to its contiguous prefix (the file's
    /// length must never vouch for holes) and goes on over one connection; `cutBack` is told the
    /// new length (to hash up to it and checkpoint).
    func join(_ output: PartialDownload, cutBack: (Int64) throws(DownloadError) -> Void) throws(DownloadError) -> DownloadMachine.SegmentsEnd {
        guard let coordinator, let file = output.partialFile else { return .incomplete }
        coordinator.waitForHelpers()
        if coordinator.failure == nil {
            // What the connections left is recorded before anything else happens to the file: at
            // once for this boot, then durably (the monitor's last checkpoint may be a second old,
            // and the final sync of a large file takes a while).
            coordinator.recordProgress()
            coordinator.checkpointRecordingFailure()
        }
        CrashPoint.reach(.afterSegmentsJoined)
        if let failure = coordinator.ioFailure {
            retire(into: output)
            throw DownloadError(.io, failure)
        }
        // A pause or cancel: the segments stay, so the stop's checkpoint records them.
        if control.shouldStop { return .incomplete }
        if case .restart(let reason) = coordinator.failure {
            disabled = true
            return .restart(reason)
        }
        let table = SegmentTable(segments: coordinator.segments)
        let reach = table.contiguousEnd(from: file.prefixLength)
        let total = output.record.finalLength ?? reach
        retire(into: output)
        let complete = table.isComplete && reach >= total
        do {
            try output.endSegments(total: complete ? total : nil, reach: reach)
        } catch {
            throw DownloadError(.io, error)
        }
        if complete { return .complete }
        disabled = true
        try cutBack(reach)
        return .incomplete
    }
}
