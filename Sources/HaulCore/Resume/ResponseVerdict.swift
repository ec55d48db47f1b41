/// How the body of an accepted response goes to disk.
package struct BodyPlan: Sendable, Equatable {
    /// Where in the partial file the body's first byte belongs; 0 means the file is truncated first.
    package var writeOffset: Int64
    /// The first `overlap` body bytes must equal the partial file's bytes at `writeOffset` and are not written.
    package var overlap: Int64
    /// Body bytes the response announced (Content-Range span or Content-Length); nil when unknown.
    package var expectedBodyLength: Int64?
    /// Offset in the remote resource of the partial file's first byte.
    package var resourceStart: Int64
    /// The resource's complete length, when known.
    package var totalLength: Int64?
    /// The length the finished file must have, when known.
    package var finalLength: Int64?
    /// The validators of the version being written.
    package var validators: Validators
    /// The content coding of the bytes being written; nil for identity.
    package var contentEncoding: String?
    /// Set when this response replaces the bytes on disk (a 200 to a resume).
    package var restartReason: RestartReason?
}

/// Why a response ends the download.
package enum VerdictFailure: Sendable, Equatable {
    /// A 4xx or 5xx status; its body is never written.
    case httpStatus(Int)
    /// The bytes on disk cannot be continued and must not be discarded (an adopted file, a range the server will not serve).
    case cannotResume(SettingText)
    /// The response breaks HTTP in a way that makes its bytes untrustworthy.
    case protocolViolation(String)
}

/// What a response means for the download. The one place where Haul decides whether bytes may be appended.
package enum ResponseVerdict: Sendable, Equatable {
    /// Write the body as planned.
    case write(BodyPlan)
    /// Nothing left to fetch: the server proved the partial file is the whole thing.
    case complete
    /// Drop this response and the partial; request the target again from its first byte.
    case restart(RestartReason)
    /// Stop with this failure; the bytes on disk are kept.
    case fail(VerdictFailure)

    /// Evaluates a non-redirect response to a request made from `plan`. Pure.
    package static func evaluate(_ head: ResponseHead, for plan: RequestPlan) -> ResponseVerdict {
        switch head.status {
        case 200: return evaluateFull(head, plan)
        case 206: return evaluatePartial(head, plan)
        case 416: return evaluateUnsatisfiable(head, plan)
        case 400...599: return .fail(.httpStatus(head.status))
        default:
            return .fail(.protocolViolation("unexpected HTTP status \(head.status) for a download"))
        }
    }

    /// `--continue` of a file longer than the server's: it cannot be a prefix of it, so it is left
    /// as it is (wget: "nothing to do"); replacing it is the user's call (`--force`).
    static func adoptedFileIsLonger(_ plan: RequestPlan, serverLength: Int64?) -> ResponseVerdict? {
        guard let partial = plan.partial, partial.isAdopted, let serverLength else { return nil }
        let local = partial.resourceStart + partial.bytesOnDisk
        guard serverLength < local else { return nil }
        return .fail(
            .cannotResume(
                "the existing file (\(local) bytes) is longer than the server's (\(serverLength) bytes), so it cannot be a part of it: it is left as it is (\(setting: .overwrite) replaces it)"
            ))
    }

    static func evaluateFull(_ head: ResponseHead, _ plan: RequestPlan) -> ResponseVerdict {
        if case .range = plan.target {
            if let partial = plan.partial, !partial.isAdopted, partial.validators.conflicts(with: head.validators) {
                // The If-Range guard fired: the file changed, so the range must be fetched anew.
                return .restart(
                    RestartReason(.resourceChanged, "the file changed on the server since the partial download: restarting the range from its first byte"))
            }
            return .fail(.cannotResume("the server ignored the byte range request and sent the whole file (status 200)"))
        }
        var restartReason: RestartReason?
        if let partial = plan.partial {
            if partial.isAdopted {
                if head.contentEncoding == nil, let longer = adoptedFileIsLonger(plan, serverLength: head.contentLength) { return longer }
                return evaluateWholeForAdopted(head, partial)
            }
            let changed =
                partial.validators.conflicts(with: head.validators)
                || (partial.totalLength != nil && head.contentLength != nil && partial.totalLength != head.contentLength)
            restartReason =
                changed
                ? RestartReason(.resourceChanged, "the file changed on the server since the partial download: restarting from byte 0")
                : RestartReason(.serverIgnoredRange, "the server ignored the Range request (status 200): restarting from byte 0")
        }
        let length = head.contentEncoding == nil ? head.contentLength : nil
        return .write(
            BodyPlan(
                writeOffset: 0,
                overlap: 0,
                expectedBodyLength: head.contentLength,
                resourceStart: 0,
                totalLength: length,
                finalLength: head.contentLength,
                validators: head.validators,
                contentEncoding: head.contentEncoding,
                restartReason: restartReason))
    }

    /// A 200 to `--continue`: the whole body is compared with the existing file as it streams
    /// (the file's length is the overlap), and only what lies beyond it is written. A compressed
    /// body, which cannot be compared, restarts at once (a shorter one was refused before).
    static func evaluateWholeForAdopted(_ head: ResponseHead, _ partial: LocalPartial) -> ResponseVerdict {
        if head.contentEncoding != nil {
            return .restart(
                RestartReason(
                    .compressedPartial,
                    "the server sent the whole file compressed (\(head.contentEncoding ?? "")), so the existing file cannot be compared with it: downloading it anew beside the existing file"
                ))
        }
        if partial.resourceStart != 0 {
            return .restart(
                RestartReason(
                    .serverIgnoredRange,
                    "the server sent the whole file, which does not line up with the existing file's first byte: downloading it anew beside the existing file"))
        }
        return .write(
            BodyPlan(
                writeOffset: 0,
                overlap: partial.bytesOnDisk,
                expectedBodyLength: head.contentLength,
                resourceStart: 0,
                totalLength: head.contentLength,
                finalLength: head.contentLength,
                validators: head.validators,
                contentEncoding: nil,
                restartReason: nil))
    }

    static func evaluatePartial(_ head: ResponseHead, _ plan: RequestPlan) -> ResponseVerdict {
        if plan.range == nil {
            return .fail(.protocolViolation("the server sent a partial response (206) to a request without Range"))
        }
        guard let contentRange = head.contentRange,
            let first = contentRange.first, let last = contentRange.last
        else {
            return .restart(RestartReason(.noUsableContentRange, "the server's partial response has no usable Content-Range: restarting from byte 0"))
        }
        if head.contentEncoding != nil {
            return .restart(
                RestartReason(
                    .compressedPartial,
                    "the server sent a compressed (\(head.contentEncoding ?? "")) partial response, which cannot be spliced: restarting from byte 0"))
        }
        if let expectedFirst = plan.requestedFirst, first != expectedFirst {
            return .restart(RestartReason(.unexpectedRange, "the server sent bytes from \(first) where \(expectedFirst) was asked for: restarting from byte 0"))
        }
        if let length = head.contentLength, length != last - first + 1 {
            return .fail(.protocolViolation("Content-Length \(length) does not match Content-Range \(first)-\(last)"))
        }
        let total = contentRange.completeLength
        if let longer = adoptedFileIsLonger(plan, serverLength: total) { return longer }
        if let wantedLast = plan.requestedLast {
            let expectedLast = total.map { min(wantedLast, $0 - 1) } ?? wantedLast
            if last != expectedLast {
                return .restart(
                    RestartReason(.unexpectedRange, "the server sent bytes up to \(last) where \(expectedLast) was asked for: restarting from byte 0"))
            }
        } else if plan.isResume || plan.requestedFirst != nil, let total, last != total - 1 {
            return .restart(RestartReason(.unexpectedRange, "the server sent bytes up to \(last) of \(total) for an open range: restarting from byte 0"))
        }
        guard let partial = plan.partial else {
            // A fresh range download: the response fixes where the partial starts.
            return .write(
                BodyPlan(
                    writeOffset: 0,
                    overlap: 0,
                    expectedBodyLength: last - first + 1,
                    resourceStart: first,
                    totalLength: total,
                    finalLength: last - first + 1,
                    validators: head.validators,
                    contentEncoding: nil,
                    restartReason: nil))
        }
        if let known = partial.totalLength {
            guard let total, total == known else {
                return .restart(
                    RestartReason(
                        .lengthChanged,
                        "the file's length on the server changed from \(known) to \(total.map(String.init) ?? "unknown"): restarting from byte 0"))
            }
        }
        if partial.validators.conflicts(with: head.validators) {
            return .restart(
                RestartReason(.resourceChanged, "the file changed on the server since the partial download (new validator): restarting from byte 0"))
        }
        if plan.ifRange != nil, plan.overlap == 0, !partial.validators.isShown(by: head.validators) {
            // Only the validator If-Range named proves the server checked it; without it (and no
            // overlap to compare) these bytes may belong to another version.
            return .restart(
                RestartReason(
                    .validatorMissing,
                    "the server's partial response does not show the validator the resume was guarded by, so it cannot be proven to be the same file: restarting from byte 0"
                ))
        }
        let finalLength: Int64?
        if plan.requestedLast != nil || total != nil {
            finalLength = last + 1 - partial.resourceStart
        } else {
            finalLength = nil
        }
        var validators = partial.validators
        let fresh = head.validators
        if validators.etag == nil { validators.etag = fresh.etag }
        if validators.lastModified == nil { validators.lastModified = fresh.lastModified }
        return .write(
            BodyPlan(
                writeOffset: first - partial.resourceStart,
                overlap: plan.overlap,
                expectedBodyLength: last - first + 1,
                resourceStart: partial.resourceStart,
                totalLength: total ?? partial.totalLength,
                finalLength: finalLength,
                validators: validators,
                contentEncoding: nil,
                restartReason: nil))
    }

    static func evaluateUnsatisfiable(_ head: ResponseHead, _ plan: RequestPlan) -> ResponseVerdict {
        guard let partial = plan.partial else {
            return .fail(.httpStatus(416))
        }
        let next = partial.resourceStart + partial.bytesOnDisk
        guard let total = head.contentRange?.completeLength else {
            return .restart(
                RestartReason(.rangeNotSatisfiable, "the server refused the resume range (416) without saying the file's length: restarting from byte 0"))
        }
        if let longer = adoptedFileIsLonger(plan, serverLength: total) { return longer }
        let lengthAgrees = partial.totalLength.map { $0 == total } ?? true
        if plan.overlap == 0, next == total, lengthAgrees, plan.requestedLast == nil {
            return .complete
        }
        return .restart(
            RestartReason(.rangeNotSatisfiable, "the server's file is \(total) bytes, which does not fit the \(next) bytes on disk: restarting from byte 0"))
    }
}
