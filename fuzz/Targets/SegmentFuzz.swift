// The segment verdict: a segment (bytes begin..<end of a file of `total` bytes, guarded by the
// validators of its first response) -> ResumePlanner.segmentPlan -> a response head (usually close
// to the right answer, one thing off) -> SegmentVerdict.evaluate. A segment's bytes are written
// into the middle of the file with nothing to compare them with, so `.write` must be earned by
// every piece of evidence; see fuzz/README.md for the list.

import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let segment = makeSegment(&input)
    let validators = makeValidators(&input)

    let plan = ResumePlanner.segmentPlan(begin: segment.begin, end: segment.end, validators: validators, total: segment.total)
    checkPlan(plan, segment, validators)

    let head = makeHead(&input, segment, validators)
    let verdict = SegmentVerdict.evaluate(head, for: plan)
    checkVerdict(verdict, head: head, plan: plan, segment)
    checkMirrorVerdict(SegmentVerdict.evaluate(head, for: plan, from: .mirror), primary: verdict, head: head)
    return 0
}

// MARK: - Inputs

/// Where a segment lies, as `SegmentCoordinator` cuts them: `0 <= begin < end <= total`.
private struct Cut {
    let begin: Int64
    let end: Int64
    let total: Int64
}

private let limit = Int64.max

private func makeSegment(_ input: inout FuzzInput) -> Cut {
    let total = input.int64(in: 1...limit)
    let begin = input.int64(in: 0...(total - 1))
    let end = input.bool() ? total : input.int64(in: (begin + 1)...total)
    return Cut(begin: begin, end: end, total: total)
}

// Strong, weak and unquoted tags, an empty one, and two spellings of one tag that are
// canonically equivalent but differ in their scalars (precomposed é, e + combining acute).
private let etags = ["\"v1\"", "\"v2\"", "W/\"v1\"", "W/\"v2\"", "v1", "\"\"", "\"\u{E9}\"", "\"e\u{301}\"", "\"V1\""]
// One instant in the three date forms, another instant, and text that is no date.
private let dates = [
    "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
    "Mon, 07 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:38 GMT", "yesterday", "",
]

/// The validators of the version the segments belong to: usually one that can guard a resume
/// (the only kind `DownloadRunner` segments with), sometimes one that cannot, or none.
private func makeValidators(_ input: inout FuzzInput) -> Validators {
    let selector = input.byte()
    let etag: EntityTag?
    switch selector & 3 {
    case 0: etag = nil
    case 3: etag = EntityTag(headerValue: input.string(maxBytes: 12))
    default: etag = EntityTag(headerValue: input.pick(etags))
    }
    let lastModified: String? = selector & 4 == 0 ? input.pick(dates) : (selector & 8 == 0 ? nil : input.string(maxBytes: 40))
    return Validators(etag: etag, lastModified: lastModified)
}

/// A number near `value`: the same, one off either way, or anything.
private func near(_ value: Int64, _ input: inout FuzzInput) -> Int64 {
    switch input.byte() % 6 {
    case 0, 1, 2: return value
    case 3: return value &+ 1
    case 4: return value &- 1
    default: return input.int64(in: 0...limit)
    }
}

/// A response: a status, then each header either absent, right for the segment, a little off, or raw text.
private func makeHead(_ input: inout FuzzInput, _ segment: Cut, _ validators: Validators) -> ResponseHead {
    let status = input.byte() % 8 == 7 ? Int(input.int64(in: 0...999)) : input.pick([206, 206, 206, 200, 416, 429, 503, 304])
    var headers = HTTPHeaders()

    switch input.byte() % 5 {
    case 0:
        break
    case 1:
        headers.add("Content-Range", input.string())
    default:
        let first = near(segment.begin, &input)
        let last = near(segment.end - 1, &input)
        let total = input.byte() % 8 == 0 ? "*" : String(near(segment.total, &input))
        headers.add("Content-Range", input.byte() % 16 == 0 ? "bytes */\(total)" : "bytes \(first)-\(last)/\(total)")
    }
    switch input.byte() % 4 {
    case 0: break
    case 1: headers.add("Content-Length", input.string(maxBytes: 24))
    default: headers.add("Content-Length", String(near(segment.end - segment.begin, &input)))
    }
    switch input.byte() % 5 {
    case 0: break
    case 1, 2: if let etag = validators.etag { headers.add("ETag", etag.headerValue) }
    case 3: headers.add("ETag", input.pick(etags))
    default: headers.add("ETag", input.string(maxBytes: 16))
    }
    switch input.byte() % 4 {
    case 0: break
    case 1: if let date = validators.lastModified { headers.add("Last-Modified", date) }
    case 2: headers.add("Last-Modified", input.pick(dates))
    default: headers.add("Last-Modified", input.string(maxBytes: 40))
    }
    if input.byte() % 6 == 0 { headers.add("Content-Encoding", input.pick(["gzip", "identity", "GZIP", " br ", ""])) }
    if input.bool() { headers.add("Accept-Ranges", input.pick(["bytes", "none"])) }
    // A second copy of a header, which lookups (first field wins) must not be confused by.
    if input.byte() % 8 == 0 {
        headers.add(input.pick(["Content-Range", "ETag", "Last-Modified", "Content-Length", "Content-Encoding"]), input.string(maxBytes: 40))
    }
    return ResponseHead(status: status, headers: headers)
}

// MARK: - Invariants

private func checkPlan(_ plan: RequestPlan, _ segment: Cut, _ validators: Validators) {
    require(
        plan.requestedFirst == segment.begin && plan.requestedLast == segment.end - 1,
        "segment \(segment.begin)..<\(segment.end) planned as \(String(describing: plan.requestedFirst))-\(String(describing: plan.requestedLast))")
    require(plan.range == "bytes=\(segment.begin)-\(segment.end - 1)", "Range \(String(describing: plan.range)) for \(segment.begin)..<\(segment.end)")
    require(plan.ifRange == validators.ifRangeValue, "If-Range \(String(describing: plan.ifRange)) for \(validators)")
    require(plan.overlap == 0, "a segment plan with an overlap: \(plan)")
    require(plan.partial?.totalLength == segment.total, "a segment plan lost the total: \(plan)")
}

/// Whether the response shows the validator that `If-Range` sent, judged here from first principles:
/// a strong tag must come back strong and scalar for scalar the same (RFC 9110 §8.8.3.2 compares
/// octets, not canonically equivalent text); a date must name the same second.
private func showsIfRangeValidator(_ head: ResponseHead, plan: RequestPlan) -> Bool {
    guard let sent = plan.ifRange, let validators = plan.partial?.validators else { return false }
    if let etag = validators.etag, !etag.isWeak, sent == etag.headerValue {
        guard let theirs = head.headers["ETag"].flatMap(EntityTag.init(headerValue:)), !theirs.isWeak else { return false }
        return Array(theirs.opaqueTag.unicodeScalars) == Array(etag.opaqueTag.unicodeScalars)
    }
    guard let mine = HTTPDate.parse(sent), let theirs = head.headers["Last-Modified"].flatMap(HTTPDate.parse) else { return false }
    return mine == theirs
}

private func checkVerdict(_ verdict: SegmentVerdict, head: ResponseHead, plan: RequestPlan, _ segment: Cut) {
    switch verdict {
    case .write:
        require(head.status == 206, "segment written from status \(head.status): \(head)")
        guard let range = head.headers["Content-Range"].flatMap(ContentRange.init(headerValue:)) else {
            violated("segment written without a usable Content-Range: \(head)")
        }
        require(
            range.first == segment.begin && range.last == segment.end - 1,
            "segment \(segment.begin)..<\(segment.end) written from Content-Range \(range): \(head)")
        require(range.completeLength == segment.total, "segment of a \(segment.total)-byte file written from Content-Range \(range): \(head)")
        require(head.contentEncoding == nil, "compressed segment written: \(head)")
        if let length = head.contentLength {
            require(length == segment.end - segment.begin, "segment written with Content-Length \(length) for \(segment.end - segment.begin) bytes")
        }
        require(
            showsIfRangeValidator(head, plan: plan),
            "segment written though the response does not show the If-Range validator \(String(describing: plan.ifRange)): \(head)")
    case .throttled:
        require(head.status == 429 || head.status == 503, "throttled by status \(head.status)")
    case .mismatch:
        require(head.status != 429 && head.status != 503, "status \(head.status) is a throttle, not a mismatch")
    case .dropSource:
        violated("the primary's segment judged as a mirror's: \(head)")
    }
}

/// A mirror's segment is held to the same rules: the same answer is written or refused; only a
/// refusal drops the mirror instead of restarting the download.
private func checkMirrorVerdict(_ verdict: SegmentVerdict, primary: SegmentVerdict, head: ResponseHead) {
    switch (primary, verdict) {
    case (.write, .write), (.throttled, .throttled), (.mismatch, .dropSource):
        break
    default:
        violated("a mirror's answer judged \(verdict) where the primary's is \(primary): \(head)")
    }
}
