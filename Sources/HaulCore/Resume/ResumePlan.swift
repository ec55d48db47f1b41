/// Which part of the remote resource a download wants.
public enum DownloadTarget: Sendable, Equatable {
    /// The whole resource.
    case whole
    /// One byte range of it (`--range`).
    case range(ByteRangeSpec)
}

/// What is known about the bytes already on disk for a download.
package struct LocalPartial: Sendable, Equatable {
    /// Bytes the partial file holds that can be trusted.
    package var bytesOnDisk: Int64
    /// Offset in the remote resource of the partial file's first byte (non-zero for range downloads).
    package var resourceStart: Int64
    /// The validators of the version the bytes came from.
    package var validators: Validators
    /// The resource's complete length, when known.
    package var totalLength: Int64?
    /// The content coding of the stored bytes; nil for identity.
    package var contentEncoding: String?
    /// A file Haul did not write (`--continue` adopting another tool's file): it must be proven
    /// against the server before a byte is appended, and is never discarded.
    package var isAdopted: Bool
    /// The validators alone do not prove the bytes on disk (they were fetched from another URL, whose
    /// server may reuse an entity tag for another file): the resume re-fetches and compares an
    /// overlap as well, and still sends `If-Range`.
    package var needsOverlapProof: Bool = false

    /// What is known about `bytesOnDisk` bytes on disk; see each property.
    package init(
        bytesOnDisk: Int64,
        resourceStart: Int64 = 0,
        validators: Validators = .none,
        totalLength: Int64? = nil,
        contentEncoding: String? = nil,
        isAdopted: Bool = false
    ) {
        self.bytesOnDisk = bytesOnDisk
        self.resourceStart = resourceStart
        self.validators = validators
        self.totalLength = totalLength
        self.contentEncoding = contentEncoding
        self.isAdopted = isAdopted
    }
}

/// Why the bytes on disk were given up and the download started again from its first byte.
public struct RestartReason: Sendable, Equatable, CustomStringConvertible {
    /// The kind of reason, for programs (the message is for people).
    public enum Code: String, Sendable {
        /// A resume was answered with the whole file (200) although the file did not change.
        case serverIgnoredRange
        /// The validators show another version of the file.
        case resourceChanged
        /// A 206 carried other bytes than the ones asked for.
        case unexpectedRange
        /// The file's complete length is not the one recorded.
        case lengthChanged
        /// The bytes on disk, or the response, are compressed (a content coding): no byte offset applies.
        case compressedPartial
        /// The re-fetched overlap differs from the bytes on disk.
        case overlapMismatch
        /// A 416 whose length does not fit the bytes on disk.
        case rangeNotSatisfiable
        /// A 206 without a usable `Content-Range`.
        case noUsableContentRange
        /// A 206 to a guarded resume that does not show the validator `If-Range` named.
        case validatorMissing
    }

    /// The kind of reason.
    public let code: Code
    /// What happened and what is done about it, for a person.
    public let message: String
    /// Bytes on disk the restart gave up (0 when there were none): the partial truncated, or a
    /// file adopted with `existingFile: .continueIt` put back, untouched, under its own name.
    /// Set by the download that discards them.
    public var discardedBytes: Int64 = 0

    /// A reason of kind `code`, told by `message`.
    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

/// How many bytes a resume without validators re-fetches and compares with the end of the partial file.
package let overlapCheckLength: Int64 = 64 * 1024

/// What to send for a download, given what is on disk.
package struct RequestPlan: Sendable, Equatable {
    /// The `Range` header value, nil for a plain request of the whole resource.
    package var range: String?
    /// The `If-Range` header value, when the partial has a validator that can guard it.
    package var ifRange: String?
    /// The absolute first byte asked for; nil when the server picks it (whole resource, suffix range).
    package var requestedFirst: Int64?
    /// The absolute last byte asked for, for closed ranges.
    package var requestedLast: Int64?
    /// Leading body bytes that must equal the last bytes of the partial file (a resume without validators).
    package var overlap: Int64
    /// The partial as it was when the plan was made; nil for a fresh start.
    package var partial: LocalPartial?
    /// The target the plan serves.
    package var target: DownloadTarget

    /// Whether the plan continues bytes already on disk.
    package var isResume: Bool { partial != nil }
}

/// What to do before sending anything.
package enum PlanDecision: Sendable, Equatable {
    /// Send this request.
    case send(RequestPlan)
    /// The partial cannot be continued; discard it and start over.
    case discardPartial(RestartReason)
    /// The record proves every wanted byte is already on disk (a closed range).
    case alreadyComplete
}

/// Decides the request for a download from the target and the partial on disk. Pure.
package enum ResumePlanner {
    /// The request to send for `target` given the bytes on disk (`partial`, nil for none): a fresh
    /// request, a `Range` from the next byte (with `If-Range` when a validator can guard it, else an
    /// overlap of up to `overlapCheckLength` bytes to compare), or a decision that needs no request.
    package static func plan(target: DownloadTarget, partial: LocalPartial?) -> PlanDecision {
        guard let partial, partial.bytesOnDisk > 0 else {
            return .send(freshPlan(target))
        }
        if partial.contentEncoding != nil && !partial.isAdopted {
            return .discardPartial(
                RestartReason(
                    .compressedPartial,
                    "the partial download holds compressed (\(partial.contentEncoding ?? "")) bytes, which cannot be resumed by byte range: restarting from byte 0"
                ))
        }
        let next = partial.resourceStart + partial.bytesOnDisk
        var last: Int64?
        if case .range(.closed(_, let requestedLast)) = target {
            last = requestedLast
            if let total = partial.totalLength { last = min(requestedLast, total - 1) }
            if let last, next > last { return .alreadyComplete }
        }
        let guarded = !partial.isAdopted && partial.validators.canGuardResume
        let proven = guarded && !partial.needsOverlapProof
        let overlap = proven ? 0 : min(overlapCheckLength, partial.bytesOnDisk)
        let first = next - overlap
        let spec: ByteRangeSpec = last.map { .closed(first: first, last: $0) } ?? .from(first: first)
        return .send(
            RequestPlan(
                range: spec.headerValue,
                ifRange: guarded ? partial.validators.ifRangeValue : nil,
                requestedFirst: first,
                requestedLast: last,
                overlap: overlap,
                partial: partial,
                target: target))
    }

    /// The request for one segment of a segmented download: bytes `begin..<end` of the version
    /// `validators` names, whose complete length is `total`. Its response is judged by
    /// `ResponseVerdict` like any other, as a resume of a partial that ends at `begin`.
    package static func segmentPlan(begin: Int64, end: Int64, validators: Validators, total: Int64) -> RequestPlan {
        RequestPlan(
            range: ByteRangeSpec.closed(first: begin, last: end - 1).headerValue,
            ifRange: validators.ifRangeValue,
            requestedFirst: begin,
            requestedLast: end - 1,
            overlap: 0,
            partial: LocalPartial(bytesOnDisk: begin, validators: validators, totalLength: total),
            target: .whole)
    }

    static func freshPlan(_ target: DownloadTarget) -> RequestPlan {
        switch target {
        case .whole:
            return RequestPlan(range: nil, ifRange: nil, requestedFirst: nil, requestedLast: nil, overlap: 0, partial: nil, target: target)
        case .range(let spec):
            var first: Int64?
            var last: Int64?
            switch spec {
            case .closed(let f, let l):
                first = f
                last = l
            case .from(let f): first = f
            case .suffix: break
            }
            return RequestPlan(range: spec.headerValue, ifRange: nil, requestedFirst: first, requestedLast: last, overlap: 0, partial: nil, target: target)
        }
    }
}
