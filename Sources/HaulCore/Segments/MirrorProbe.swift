import Foundation

/// Proving that a mirror serves the download's file before any of its bytes are kept.
///
/// A mirror is another server, so its validators usually differ from the primary's even for the
/// same bytes (nginx's ETag is the mtime and the size): equal validators would not prove
/// sameness across servers, and different ones do not prove a difference. So every mirror is
/// checked the same way, before any of its segments is asked for:
///
/// 1. its length: the probe is a closed range whose `Content-Range` must carry the primary's total;
/// 2. its bytes: the probe asks for a window of bytes the primary already delivered (on disk), and
///    the body is compared with them byte for byte, never written;
/// 3. its version: the probe's response must carry a validator `If-Range` can hold (a strong ETag
///    or a Last-Modified date). Every segment request to the mirror then carries that validator,
///    so the mirror cannot switch versions between the probe and its last segment unseen.
///
/// Pure: the coordinator sends the plan, compares the bytes and carries the verdict out.
package enum MirrorProbe {
    /// The bytes of the primary's delivered prefix a probe compares: the last `overlapCheckLength`
    /// below the primary's position. Nil while the prefix is shorter than that and the primary's
    /// connection still has its part to fetch (wait for it); once that part is done, whatever
    /// prefix there is.
    package static func window(mainNext: Int64, mainEnd: Int64) -> Range<Int64>? {
        if mainNext >= overlapCheckLength { return (mainNext - overlapCheckLength)..<mainNext }
        if mainNext > 0, mainNext >= mainEnd { return 0..<mainNext }
        return nil
    }

    /// The probe's request: exactly `window` of a file of `total` bytes, without `If-Range` (the
    /// mirror's validators are not known yet; the comparison is the proof), judged by
    /// `ResponseVerdict` as a resume whose overlap is the whole body.
    package static func plan(window: Range<Int64>, total: Int64) -> RequestPlan {
        var partial = LocalPartial(bytesOnDisk: window.upperBound, validators: .none, totalLength: total)
        partial.needsOverlapProof = true
        return RequestPlan(
            range: ByteRangeSpec.closed(first: window.lowerBound, last: window.upperBound - 1).headerValue,
            ifRange: nil,
            requestedFirst: window.lowerBound,
            requestedLast: window.upperBound - 1,
            overlap: Int64(window.count),
            partial: partial,
            target: .whole)
    }

    /// What the probe's response means.
    package enum Verdict: Sendable, Equatable {
        /// Compare the body with the bytes on disk at `plan.requestedFirst`; if every byte is
        /// equal, the mirror is admitted and its segment requests carry `validators` in `If-Range`.
        case compare(validators: Validators)
        /// The mirror is dropped before any of its bytes are used; the message says why.
        case drop(String)
    }

    /// Whether mirrors may serve at all: a probe proves 64 KiB of a mirror's bytes, not the rest,
    /// so only a digest of the whole file (`wholeFile`) proves what mirrors deliver; without one
    /// they are not used unless the user allowed it. Nil: they may; else why not.
    package static func refusal(wholeFile: Checksum?, allowsUnverified: Bool) -> String? {
        guard wholeFile == nil, !allowsUnverified else { return nil }
        return
            "no digest of the whole file is known (no checksum given, none published by the primary), so only its 64 KiB probe could prove its bytes: not used (allow unverified mirrors to use it anyway)"
    }

    /// Judges the probe's (non-redirect) response with the download's own verdict, and any digest
    /// of the file it publishes against `wholeFile`'s (another digest is another file). Pure.
    package static func evaluate(_ head: ResponseHead, for plan: RequestPlan, wholeFile: Checksum? = nil) -> Verdict {
        if let wholeFile, let expected = wholeFile.expectedHex {
            for digest in ServerDigests.read(head.headers, status: head.status).usable
            where digest.algorithm == wholeFile.algorithm && digest.expectedHex.lowercased() != expected.lowercased() {
                return .drop(
                    "it publishes another \(digest.algorithm.rawValue) of the file in \(digest.source) (\(digest.expectedHex)) than the download is checked against (\(expected))"
                )
            }
        }
        switch ResponseVerdict.evaluate(head, for: plan) {
        case .write(let body):
            if let reason = body.restartReason { return .drop(disagreement(head, plan, reason)) }
            guard body.overlap == plan.overlap, body.writeOffset == plan.requestedFirst else {
                return .drop(
                    disagreement(head, plan, RestartReason(.unexpectedRange, "the probe's answer does not cover the bytes asked for")))
            }
            guard body.validators.canGuardResume else {
                return .drop(
                    "it sends no strong ETag and no Last-Modified date, so its ranges could not be held to one version with If-Range")
            }
            return .compare(validators: body.validators)
        case .restart(let reason):
            return .drop(disagreement(head, plan, reason))
        case .complete:
            return .drop(disagreement(head, plan, RestartReason(.unexpectedRange, "answered as if nothing were left")))
        case .fail(.httpStatus(let status)):
            return .drop("it answered a range request with status \(status)")
        case .fail(.cannotResume(let message)):
            return .drop("its answer breaks HTTP (\(message))")
        case .fail(.protocolViolation(let message)):
            return .drop("its answer breaks HTTP (\(message))")
        }
    }

    /// Says, in terms of the mirror, why its answer to `plan` was refused for `reason` (whose own
    /// message talks of restarting the download, which a mirror's failure never does).
    package static func disagreement(_ head: ResponseHead, _ plan: RequestPlan, _ reason: RestartReason) -> String {
        let known = plan.partial?.totalLength
        let theirs = head.contentRange?.completeLength ?? (head.status == 200 && head.contentEncoding == nil ? head.contentLength : nil)
        if let known, let theirs, theirs != known {
            return "its file is \(theirs) bytes, the primary's \(known)"
        }
        if head.status != 206 {
            return "it answered the range request \(plan.range ?? "") with status \(head.status)"
        }
        switch reason.code {
        case .lengthChanged:
            return "it did not say its file's length in Content-Range"
        case .resourceChanged, .validatorMissing:
            return "its answer does not show the version it was admitted with (If-Range \(plan.ifRange ?? "none"))"
        case .compressedPartial:
            return "it sent the range compressed (\(head.contentEncoding ?? "unknown")), which cannot be spliced"
        default:
            return "it did not send the range asked for (\(plan.range ?? "none"))"
        }
    }

    /// Said when the probe's bytes differ from the primary's.
    package static func bytesDiffer(at offset: Int64) -> String {
        "its bytes differ from the primary's at offset \(offset)"
    }
}

extension TransferRequest {
    /// The request a mirror is asked with, built from the mirror's URL alone: `GET` without a body,
    /// and of the primary's request only what says who is asking and how the bytes must come
    /// (`User-Agent`, `Accept-Encoding`). Nothing else of the primary's goes to another server:
    /// no `Authorization`, `Cookie` or `Proxy-Authorization`, no other header a user gave for the
    /// primary (it may carry a key), no body. A login the mirror needs comes with its own URL
    /// (`user:password@`), or from a netrc file or cookie jar, which hold credentials per host.
    package static func mirror(_ url: URL, askedLike primary: TransferRequest) -> TransferRequest {
        var headers = HTTPHeaders()
        for name in Self.headersKeptForMirrors {
            if let value = primary.headers[name] { headers.set(name, value) }
        }
        return TransferRequest(url: url, method: "GET", headers: headers, body: nil)
    }

    /// The headers of the primary's request that a mirror's request carries too.
    package static let headersKeptForMirrors = ["User-Agent", "Accept-Encoding"]
}
