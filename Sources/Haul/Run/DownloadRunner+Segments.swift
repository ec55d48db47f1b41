import Foundation
import HaulCore
import HaulStore

extension DownloadRunner {
    /// After the first response of a download is accepted: fetch the rest over several connections
    /// when `SegmentEligibility` says so.
    func startSegmentsIfUseful(_ body: BodyPlan, _ head: ResponseHead, sent: TransferRequest, output: PartialDownload) {
        let eligibility = SegmentEligibility(
            body: body, status: head.status, acceptsByteRanges: head.acceptsByteRanges, wholeResource: request.target == .whole,
            resumableOutput: output.partialFile != nil, bytesOnDisk: output.sink.length, resumesSegments: output.record.segments != nil,
            segmentsRunningOrDisabled: segments != nil || segmentingDisabled, connections: request.connections, hasHost: sent.url.host != nil)
        guard let helpers = eligibility.helpers, let file = output.partialFile, let host = sent.url.host, let total = body.totalLength else {
            return
        }
        var setup = SegmentCoordinator.Setup(
            request: sent, transfer: request.transfer, validators: body.validators, total: total,
            host: host, maxHelpers: helpers, adaptive: request.connections == nil, retry: request.retry,
            rateLimiter: request.rateLimiter)
        setup.mirrors = mirrorRequests(askedLike: sent)
        setup.redirects = RedirectPolicy(maxRedirects: request.maxRedirects, allowsDowngrade: request.allowsHTTPRedirect)
        setup.wholeFileDigest = expectedDigest.flatMap { $0.expectedHex == nil ? nil : $0 }
        setup.allowsUnverifiedMirrors = request.allowsUnverifiedMirrors
        guard let saveSegments = output.segmentSaver() else { return }
        let coordinator = SegmentCoordinator(
            setup: setup, file: file, transport: transport, control: control,
            mainNext: output.sink.length, resumed: output.record.segments,
            progressMap: output.segmentProgressMap(prefix: output.sink.length, segments: output.record.segments ?? []),
            onMirror: { [hub, mirrorLedger] note in
                mirrorLedger.note(note)
                hub.publish(.mirror(note))
            },
            saveRecord: saveSegments)
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

    /// Stops the extra connections (their progress stays with the coordinator for a checkpoint).
    func endSegments() {
        segments?.stopAndWait()
    }

    /// The runner's connection reached its part: wait for the others and say how they ended. A
    /// segmented download that cannot complete is cut back to its contiguous prefix (the file's
    /// length must never vouch for holes) and goes on over one connection.
    func joinSegments(_ output: PartialDownload) throws(DownloadError) -> DownloadMachine.SegmentsEnd {
        guard let coordinator = segments, let file = output.partialFile else { return .incomplete }
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
        let total = output.record.finalLength ?? reach
        retireSegments()
        let complete = table.isComplete && reach >= total
        do {
            try output.endSegments(total: complete ? total : nil, reach: reach)
        } catch {
            throw DownloadError(.io, error)
        }
        if complete { return .complete }
        segmentingDisabled = true
        if let hash { try feed(hash, from: output, upTo: reach) }
        try checkpointOrFail()
        return .incomplete
    }
}
