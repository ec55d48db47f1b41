// The resume decision: a target and a partial on disk -> ResumePlanner.plan -> a response head
// (often a plausible answer to the plan, sometimes nonsense) -> ResponseVerdict.evaluate.
// Checks the invariants that keep bytes in the right place; see fuzz/README.md for the list.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let target = makeTarget(&input)
    let partial = input.bool() ? makePartial(&input, for: target) : nil

    let decision = ResumePlanner.plan(target: target, partial: partial)
    let plan: RequestPlan
    switch decision {
    case .send(let sent):
        checkPlan(sent, target: target, partial: partial)
        plan = sent
    case .discardPartial(let reason):
        guard let partial else { violated("discardPartial without a partial") }
        require(!partial.isAdopted, "an adopted file would be discarded: \(reason)")
        require(partial.contentEncoding != nil, "discarded an identity partial: \(reason)")
        return 0
    case .alreadyComplete:
        guard let partial, case .range(.closed(_, let last)) = target else {
            violated("alreadyComplete for \(target) with \(String(describing: partial))")
        }
        let wantedLast = partial.totalLength.map { min(last, $0 - 1) } ?? last
        require(partial.resourceStart + partial.bytesOnDisk > wantedLast, "alreadyComplete with bytes missing: \(partial)")
        return 0
    }

    let head = makeHead(&input, plan: plan)
    let verdict = ResponseVerdict.evaluate(head, for: plan)
    checkVerdict(verdict, head: head, plan: plan)
    return 0
}

// MARK: - Inputs

private let limit = Int64.max

private func makeTarget(_ input: inout FuzzInput) -> DownloadTarget {
    switch input.byte() % 4 {
    case 0, 1:
        return .whole
    case 2:
        let first = input.int64(in: 0...limit)
        return input.bool() ? .range(.from(first: first)) : .range(.closed(first: first, last: input.int64(in: first...limit)))
    default:
        return .range(.suffix(length: input.int64(in: 1...limit)))
    }
}

/// A partial as Haul could have recorded it: it usually starts where the target starts, its bytes
/// never reach past Int64.max, and a known total is at least as long as what is on disk.
private func makePartial(_ input: inout FuzzInput, for target: DownloadTarget) -> LocalPartial {
    let resourceStart: Int64
    switch (target, input.byte() % 4) {
    case (.range(.closed(let first, _)), 0...2), (.range(.from(let first)), 0...2): resourceStart = first
    case (.whole, 0...2): resourceStart = 0
    default: resourceStart = input.int64(in: 0...limit)
    }
    let bytesOnDisk = input.int64(in: 0...(limit - resourceStart))
    let next = resourceStart + bytesOnDisk
    let totalLength: Int64? = input.bool() ? input.int64(in: next...limit) : nil
    let contentEncoding: String? = input.byte() % 8 == 0 ? input.pick(["gzip", "br", "x-custom"]) : nil
    return LocalPartial(
        bytesOnDisk: bytesOnDisk,
        resourceStart: resourceStart,
        validators: makeValidators(&input),
        totalLength: totalLength,
        contentEncoding: contentEncoding,
        isAdopted: input.byte() % 4 == 0)
}

private let etags = ["\"v1\"", "\"v2\"", "W/\"v1\"", "W/\"v2\"", "v1", "\"\""]
private let dates = ["Sun, 06 Nov 1994 08:49:37 GMT", "Mon, 07 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "yesterday"]

private func makeValidators(_ input: inout FuzzInput) -> Validators {
    let selector = input.byte()
    let etag = selector & 1 == 0 ? EntityTag(headerValue: input.pick(etags)) : nil
    let lastModified = selector & 2 == 0 ? input.pick(dates) : nil
    return Validators(etag: etag, lastModified: lastModified)
}

/// A response: the status, then each header either absent, plausible for the plan, or raw text.
private func makeHead(_ input: inout FuzzInput, plan: RequestPlan) -> ResponseHead {
    let status = input.byte() % 8 == 7 ? Int(input.int64(in: 0...999)) : input.pick([200, 206, 416, 206, 200, 304, 503])
    var headers = HTTPHeaders()
    let wantedFirst = plan.requestedFirst ?? 0
    let known = plan.partial?.totalLength

    switch input.byte() % 4 {
    case 0:
        break
    case 1:
        headers.add("Content-Range", input.string())
    default:
        // Close to what was asked: first off by a little, last / total chosen around the plan.
        let first = input.bool() ? wantedFirst : input.int64(in: 0...limit)
        let total: Int64? = input.bool() ? (known ?? input.int64(in: 0...limit)) : (input.bool() ? nil : input.int64(in: 0...limit))
        let last: Int64
        if input.bool(), let total, total > 0 {
            last = total - 1
        } else if input.bool(), let requestedLast = plan.requestedLast {
            last = requestedLast
        } else {
            last = input.int64(in: 0...limit)
        }
        let value =
            input.byte() % 16 == 0
            ? "bytes */\(total.map(String.init) ?? "*")"
            : "bytes \(first)-\(last)/\(total.map(String.init) ?? "*")"
        headers.add("Content-Range", value)
    }
    switch input.byte() % 4 {
    case 0:
        break
    case 1:
        headers.add("Content-Length", input.string(maxBytes: 24))
    default:
        if let range = ContentRange(headerValue: headers["Content-Range"] ?? ""), let length = range.length, input.bool() {
            headers.add("Content-Length", String(length))
        } else {
            headers.add("Content-Length", String(input.int64(in: 0...limit)))
        }
    }
    let mine = plan.partial?.validators ?? .none
    switch input.byte() % 4 {
    case 0: break
    case 1: if let etag = mine.etag { headers.add("ETag", etag.headerValue) }
    case 2: headers.add("ETag", input.pick(etags))
    default: headers.add("ETag", input.string(maxBytes: 16))
    }
    switch input.byte() % 3 {
    case 0: break
    case 1: if let date = mine.lastModified { headers.add("Last-Modified", date) }
    default: headers.add("Last-Modified", input.pick(dates))
    }
    if input.byte() % 6 == 0 { headers.add("Content-Encoding", input.pick(["gzip", "identity", "GZIP", " br "])) }
    if input.bool() { headers.add("Accept-Ranges", input.pick(["bytes", "none", "Bytes"])) }
    return ResponseHead(status: status, headers: headers)
}

// MARK: - Invariants

private func checkPlan(_ plan: RequestPlan, target: DownloadTarget, partial: LocalPartial?) {
    require(plan.target == target, "plan for another target")
    guard let partial, partial.bytesOnDisk > 0 else {
        require(!plan.isResume && plan.overlap == 0 && plan.ifRange == nil, "fresh plan carries resume state: \(plan)")
        return
    }
    let next = partial.resourceStart + partial.bytesOnDisk
    require(plan.partial == partial, "resume plan lost its partial")
    require(plan.overlap >= 0 && plan.overlap <= partial.bytesOnDisk && plan.overlap <= overlapCheckLength, "overlap \(plan.overlap) for \(partial)")
    require(
        plan.requestedFirst == next - plan.overlap, "resume asks from \(String(describing: plan.requestedFirst)), next byte is \(next), overlap \(plan.overlap)"
    )
    require(plan.range?.hasPrefix("bytes=\(next - plan.overlap)-") == true, "Range \(String(describing: plan.range)) for next byte \(next)")
    if partial.isAdopted {
        // An adopted file is proven by overlap, never by a validator Haul did not record.
        require(plan.ifRange == nil && plan.overlap > 0, "adopted partial resumed without an overlap check: \(plan)")
    }
    if plan.ifRange == nil {
        require(plan.overlap > 0, "unguarded resume without an overlap check: \(plan)")
    } else {
        require(plan.overlap == 0, "guarded resume with an overlap: \(plan)")
    }
    if let last = plan.requestedLast, let first = plan.requestedFirst {
        require(first <= last, "plan asks for \(first)-\(last)")
    }
}

private func checkVerdict(_ verdict: ResponseVerdict, head: ResponseHead, plan: RequestPlan) {
    let partial = plan.partial
    switch verdict {
    case .write(let body):
        require([200, 206].contains(head.status), "write for status \(head.status)")
        require(body.writeOffset >= 0 && body.overlap >= 0, "negative offset/overlap: \(body)")
        if head.status == 200 {
            // A 200 starts at byte 0; only an adopted file is compared with it first, all of it.
            let overlap = partial?.isAdopted == true ? partial?.bytesOnDisk ?? 0 : 0
            require(body.writeOffset == 0 && body.overlap == overlap, "a 200 would be written at offset \(body.writeOffset) with overlap \(body.overlap)")
            if overlap > 0 { require(head.contentEncoding == nil, "a compressed 200 compared with an adopted file") }
            require(body.resourceStart == 0, "a 200 with resourceStart \(body.resourceStart)")
        }
        if let partial, body.writeOffset > 0 || body.overlap > 0 {
            // Appending: the body continues exactly where the trusted bytes end.
            require(
                body.writeOffset + body.overlap == partial.bytesOnDisk,
                "resume writes at \(body.writeOffset) + overlap \(body.overlap), partial has \(partial.bytesOnDisk) bytes: head \(head), plan \(plan)")
            require(body.resourceStart == partial.resourceStart, "resume moved resourceStart")
            require(body.restartReason == nil, "append with a restart reason")
        }
        if head.status == 206, let partial {
            require(
                body.writeOffset + body.overlap == partial.bytesOnDisk,
                "206 to a resume written at \(body.writeOffset) + \(body.overlap), partial has \(partial.bytesOnDisk): head \(head)")
            if partial.isAdopted {
                require(body.overlap > 0, "adopted file appended to without an overlap check")
            }
        }
        if partial?.isAdopted == true {
            require(body.writeOffset > 0 || body.overlap > 0, "an adopted file would be truncated: \(body)")
        }
        if let expected = body.expectedBodyLength {
            require(expected >= 0, "negative expected body length")
            if let final = body.finalLength {
                require(final == body.writeOffset + expected, "final length \(final) != offset \(body.writeOffset) + body \(expected)")
            }
        }
        if let total = body.totalLength, let final = body.finalLength, body.contentEncoding == nil {
            require(body.resourceStart + final <= total, "file of \(final) from \(body.resourceStart) overruns total \(total)")
        }
        if let coding = body.contentEncoding {
            require(body.writeOffset == 0, "compressed bytes appended to a partial (\(coding))")
        }
    case .complete:
        require(head.status == 416, "complete from status \(head.status)")
        guard let partial else { violated("complete without a partial") }
        require(plan.overlap == 0, "complete while an overlap check was still due")
        require(head.contentRange?.completeLength == partial.resourceStart + partial.bytesOnDisk, "complete with a length mismatch")
    case .restart(let reason):
        // An adopted partial may restart too: the runner then puts the file back under its name
        // and downloads anew beside it, so the verdict never decides to throw it away.
        _ = reason
        require([200, 206, 416].contains(head.status), "restart for status \(head.status)")
    case .fail(let failure):
        if case .httpStatus(let status) = failure {
            require(status == head.status && (400...599).contains(status), "httpStatus \(status) for \(head.status)")
        }
        if (400...599).contains(head.status), head.status != 416 {
            require(failure == .httpStatus(head.status), "status \(head.status) failed as \(failure)")
        }
    }
}
