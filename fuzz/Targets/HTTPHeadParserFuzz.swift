// fuzz-sources: Sources/HaulServe/HTTPServer/HTTPHeadParser.swift Sources/HaulServe/HTTPServer/HTTPRequestHead.swift
// fuzz-sources: Sources/HaulServe/HTTPServer/HTTPRefusal.swift Sources/HaulServe/HTTPServer/HTTPRequestFraming.swift
// The first code of `haul serve` to meet a client's bytes: arbitrary bytes as the input of a
// connection, under an arbitrary head limit, parsed by `HTTPHeadParser` all at once and as a
// connection reads them (in arbitrary chunks, each parse resuming where the last one's search
// stopped, as `Connection.advance` does), then framed by `HTTPRequestFraming`.
// Checks: nothing traps; a head's length is within the input and the limit and ends its blank
// line; resuming gives the same verdict as parsing from the start; a head parses again from its
// own bytes alone; its method is a token, its target printable, its version 1.0 or 1.1, its
// fields at most the maximum with token names and values that hold no line break or control
// character and no space at either end; a refusal is 400, 411, 417, 431, 501 or 505 with a
// reason; a framed body length is never negative.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let all = Array(UnsafeBufferPointer(start: data, count: size))
    guard all.count >= 2 else { return 0 }
    // The first two bytes choose the limit (from 1 byte up to past the input) and the chunking.
    let limit = 1 + Int(all[0]) * 17
    let chunkSeed = Int(all[1])
    let bytes = ArraySlice(all.dropFirst(2))

    let whole = HTTPHeadParser.parse(bytes, limit: limit)
    check(whole, bytes, limit: limit)

    // As a connection reads them: after each read, parse what it holds, resuming the search 3
    // bytes before the end of what was searched (a head's end is at most 4 bytes: CR LF CR LF).
    var held = 0
    var searched = 0
    var step = 0
    while held < bytes.count {
        step += 1
        held = min(bytes.count, held + 1 + (chunkSeed &* step) % 37)
        let prefix = bytes.prefix(held)
        let resumed = HTTPHeadParser.parse(prefix, limit: limit, resumeAt: searched)
        let fresh = HTTPHeadParser.parse(prefix, limit: limit)
        require(resumed == fresh, "resuming at \(searched) of \(held) gave \(resumed), from 0 \(fresh)")
        check(resumed, prefix, limit: limit)
        guard resumed == .incomplete else {
            // What a connection acts on is what the whole input says, when the whole input is no longer.
            if held == bytes.count { require(resumed == whole, "byte by byte \(resumed), all at once \(whole)") }
            return 0
        }
        searched = max(0, held - 3)
    }
    require(whole == .incomplete, "fed in chunks it stayed incomplete, all at once \(whole)")
    return 0
}

private func check(_ verdict: HTTPHeadParser.Verdict, _ bytes: ArraySlice<UInt8>, limit: Int) {
    switch verdict {
    case .incomplete:
        require(bytes.count < limit, "incomplete with \(bytes.count) bytes held under a limit of \(limit)")
    case .refused(let refusal):
        require([400, 411, 417, 431, 501, 505].contains(refusal.status), "refused with \(refusal.status)")
        require(!refusal.reason.isEmpty, "a refusal without a reason")
    case .head(let head, let length):
        require(length > 0 && length <= bytes.count && length <= limit, "head of \(length) in \(bytes.count) bytes, limit \(limit)")
        require(bytes[bytes.startIndex + length - 1] == 0x0A, "a head that does not end its blank line")
        let again = HTTPHeadParser.parse(bytes.prefix(length), limit: limit)
        require(again == verdict, "its own bytes parse to \(again)")
        require(!head.method.isEmpty && head.method.utf8.allSatisfy(HTTPHeadParser.isTokenByte), "method \(head.method.debugDescription)")
        require(!head.target.isEmpty && head.target.utf8.allSatisfy { (0x21...0x7E).contains($0) }, "target \(head.target.debugDescription)")
        require(head.minorVersion == 0 || head.minorVersion == 1, "HTTP/1.\(head.minorVersion)")
        require(head.headers.count <= HTTPHeadParser.maximumFields, "\(head.headers.count) fields")
        for field in head.headers {
            require(!field.name.isEmpty && field.name.utf8.allSatisfy(HTTPHeadParser.isTokenByte), "field name \(field.name.debugDescription)")
            let value = Array(field.value.utf8)
            require(value.allSatisfy { ($0 >= 0x20 && $0 != 0x7F) || $0 == 0x09 }, "field value \(field.value.debugDescription)")
            require(value.first != 0x20 && value.first != 0x09 && value.last != 0x20 && value.last != 0x09, "untrimmed \(field.value.debugDescription)")
        }
        switch HTTPRequestFraming.of(head) {
        case .success(let framing): require(framing.bodyLength >= 0, "body of \(framing.bodyLength)")
        case .failure(let refusal): require([400, 411, 417, 501].contains(refusal.status), "framing refused with \(refusal.status)")
        }
    }
}
