/// Which server a segment request went to: the download's own (the final hop of its first
/// request), or a mirror proven to serve the same file (`MirrorProbe`).
package enum SegmentSource: Sendable, Equatable {
    /// The download's own server.
    case primary
    /// A mirror given in `DownloadRequest.mirrors`.
    case mirror
}

/// What a response to a segment request means. Decided by `ResponseVerdict`, the same code that
/// judges a download's first connection, so a segment is held to every rule a resume is, whichever
/// server it came from.
package enum SegmentVerdict: Sendable, Equatable {
    /// Write the body at the segment's offset.
    case write
    /// The server wants fewer connections (429, 503): this connection ends, no more are added.
    case throttled
    /// The response shows another version, a whole body, a wrong range or an error: the segmented
    /// download stops and starts over from byte 0 over one connection.
    case mismatch(RestartReason)
    /// A mirror's response fails a rule that a primary's `.mismatch` would: the mirror is dropped
    /// (this message says why), nothing it sent is written, and its range goes back to the other
    /// connections. The download itself goes on.
    case dropSource(String)

    /// Judges `head` as the answer to `plan` (from `ResumePlanner.segmentPlan`, with the validators
    /// of the server asked: a mirror's own) from `source`. Every rule is the same for every source;
    /// only what a broken rule costs differs. Pure.
    package static func evaluate(_ head: ResponseHead, for plan: RequestPlan, from source: SegmentSource = .primary) -> SegmentVerdict {
        let verdict = evaluateRules(head, plan)
        guard source == .mirror, case .mismatch(let reason) = verdict else { return verdict }
        return .dropSource(MirrorProbe.disagreement(head, plan, reason))
    }

    private static func evaluateRules(_ head: ResponseHead, _ plan: RequestPlan) -> SegmentVerdict {
        if head.status == 429 || head.status == 503 { return .throttled }
        switch ResponseVerdict.evaluate(head, for: plan) {
        case .write(let body):
            if let reason = body.restartReason { return .mismatch(reason) }
            // A segment is proven to be the same version only by the validator If-Range named
            // (ResponseVerdict checks it only when one was sent): without one, nothing ties these
            // bytes to the rest of the file.
            guard plan.ifRange != nil else {
                return .mismatch(
                    RestartReason(
                        .validatorMissing,
                        "a segment request carried no If-Range validator, so its response cannot be proven to be the same file: restarting from byte 0 over one connection"
                    ))
            }
            guard body.overlap == 0, body.writeOffset == plan.requestedFirst,
                body.expectedBodyLength == plan.requestedLast.flatMap({ last in plan.requestedFirst.map { last - $0 + 1 } })
            else {
                return .mismatch(
                    RestartReason(.unexpectedRange, "a segment response did not carry the range asked for: restarting from byte 0 over one connection"))
            }
            return .write
        case .restart(let reason):
            return .mismatch(reason)
        case .complete:
            return .mismatch(
                RestartReason(.unexpectedRange, "a segment request was answered as if nothing were left to fetch: restarting from byte 0 over one connection"))
        case .fail(.httpStatus(let status)):
            return .mismatch(
                RestartReason(.serverIgnoredRange, "a segment request was answered with status \(status), not 206: restarting from byte 0 over one connection"))
        case .fail(.cannotResume(let message)):
            return .mismatch(refused(message.description))
        case .fail(.protocolViolation(let message)):
            return .mismatch(refused(message))
        }
    }

    private static func refused(_ message: String) -> RestartReason {
        RestartReason(.unexpectedRange, "a segment response was refused (\(message)): restarting from byte 0 over one connection")
    }
}
