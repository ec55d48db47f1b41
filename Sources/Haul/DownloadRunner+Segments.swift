import Foundation
import HaulCore
import HaulStore

extension DownloadRunner {
    /// Connections per file when adapting (no `connections` given).
    static let adaptiveConnectionLimit = 8
    static let maximumConnections = 16

    /// After the first response of a download is accepted: fetch the rest over several connections
    /// when the server can serve ranges of this exact version and the file is big enough.
    func startSegmentsIfUseful(_ body: BodyPlan, _ head: ResponseHead, sent: TransferRequest, output: PreparedOutput) {
        let limit = min(Self.maximumConnections, request.connections ?? Self.adaptiveConnectionLimit)
        guard segments == nil, !segmentingDisabled, limit > 1, case .whole = request.target,
            case .partial(let file) = output.sink,
            body.overlap == 0, body.contentEncoding == nil, body.resourceStart == 0,
            let total = body.totalLength, body.finalLength == total,
            body.validators.canGuardResume,
            head.acceptsByteRanges || head.status == 206,
            total - output.sink.length >= 4 * SegmentTable.minimumSplit || record.segments != nil,
            let host = sent.url.host
        else { return }
        var setup = SegmentCoordinator.Setup(
            request: sent, transfer: request.transfer, validators: body.validators, total: total,
            host: host, maxHelpers: limit - 1, adaptive: request.connections == nil, retry: request.retry,
            rateLimiter: request.rateLimiter)
        setup.mirrors = mirrorRequests(askedLike: sent)
        setup.redirects = RedirectPolicy(maxRedirects: request.maxRedirects, allowsDowngrade: request.allowsHTTPRedirect)
        setup.wholeFileDigest = expectedDigest.flatMap { $0.expectedHex == nil ? nil : $0 }
        setup.allowsUnverifiedMirrors = request.allowsUnverifiedMirrors
        guard let keeper, let layout = output.layout else { return }
        let snapshot = record
        let coordinator = SegmentCoordinator(
            setup: setup, file: file, transport: transport, control: control,
            mainNext: output.sink.length, resumed: record.segments,
            progressMap: Self.progressMap(layout, prefix: output.sink.length, segments: record.segments ?? []),
            onMirror: { [hub, mirrorLedger] note in
                mirrorLedger.note(note)
                hub.publish(.mirror(note))
            },
            saveRecord: { prefix, segments, synced throws(StoreError) in
                try keeper.saveSegments(snapshot, prefix: prefix, segments: segments, synced: synced)
            })
        segments = coordinator
        coordinator.start()
    }

    /// The mirrors' requests, each built from its own URL alone (`TransferRequest.mirror`). Mirrors
    /// serve a plain GET: a download that sends a body or another method has none.
    func mirrorRequests(askedLike sent: TransferRequest) -> [TransferRequest] {
        guard sent.method == "GET", sent.body == nil else { return [] }
        return request.mirrors.filter { $0.host != nil }.map { TransferRequest.mirror($0, askedLike: sent) }
    }

    /// Forgets the coordinator once its connections ended, keeping the count of bytes they moved;
    /// its progress map goes with it (the record no longer has segments).
    func retireSegments() {
        if let segments {
            retiredSegmentBytes += segments.transferred
            segments.progressMap?.remove()
        }
        segments = nil
    }

    /// The mapped progress file; without one (no memory map here) the monitor records progress
    /// every 0.1 s instead, so a failure costs re-fetching, never trust.
    static func progressMap(_ layout: OutputLayout, prefix: Int64, segments: [Segment]) -> SegmentProgressMap? {
        do {
            return try SegmentProgressMap(path: layout.segmentMapPath, prefix: prefix, segments: segments)
        } catch {
            return nil
        }
    }

    /// Stops the extra connections (their progress stays with the coordinator for a checkpoint).
    func endSegments() {
        segments?.stopAndWait()
    }

    /// The runner's connection reached its part: wait for the others and say how they ended. A
    /// segmented download that cannot complete is cut back to its contiguous prefix (the file's
    /// length must never vouch for holes) and goes on over one connection.
    func joinSegments(_ output: PreparedOutput) throws(DownloadError) -> DownloadMachine.SegmentsEnd {
        guard let coordinator = segments, case .partial(let file) = output.sink else { return .incomplete }
        coordinator.waitForHelpers()
        if let failure = coordinator.ioFailure {
            retireSegments()
            throw DownloadError(.io, failure)
        }
        // A pause or cancel: the segments stay, so the stop's checkpoint records them.
        if control.shouldStop { return .incomplete }
        if case .restart(let reason) = coordinator.failure {
            segmentingDisabled = true
            return .restart(reason)
        }
        let table = SegmentTable(segments: coordinator.segments)
        let reach = table.contiguousEnd(from: file.length)
        let total = record.finalLength ?? reach
        retireSegments()
        record.segments = nil
        record.segmentPrefix = nil
        if table.isComplete && reach >= total {
            file.setPrefixLength(total)
            return .complete
        }
        segmentingDisabled = true
        do {
            try file.truncate(to: reach)
        } catch {
            throw DownloadError(.io, error)
        }
        if let hash { try feed(hash, from: output, upTo: reach) }
        try checkpointOrFail()
        return .incomplete
    }
}
