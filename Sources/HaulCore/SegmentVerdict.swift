/// What a response to a segment request means. Decided by `ResponseVerdict`, the same code that
/// judges a download's first connection, so a segment is held to every rule a resume is.
public enum SegmentVerdict: Sendable, Equatable {
    /// Write the body at the segment's offset.
    case write
    /// The server wants fewer connections (429, 503): this connection ends, no more are added.
    case throttled
    /// The response shows another version, a whole body, a wrong range or an error: the segmented
    /// download stops and starts over from byte 0 over one connection.
    case mismatch(RestartReason)

    /// Judges `head` as the answer to `plan` (from `ResumePlanner.segmentPlan`). Pure.
    public static func evaluate(_ head: ResponseHead, for plan: RequestPlan) -> SegmentVerdict {
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
        case .fail(.cannotResume(let message)), .fail(.protocolViolation(let message)):
            return .mismatch(RestartReason(.unexpectedRange, "a segment response was refused (\(message)): restarting from byte 0 over one connection"))
        }
    }
}
