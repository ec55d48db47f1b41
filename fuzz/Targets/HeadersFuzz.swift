// A response head as raw header lines -> HTTPHeaders -> ResponseHead accessors.
// The lines are split the way the libcurl engine does it (CurlCallContext.receiveHeaderLine:
// CR/LF stripped as bytes, "name: value" split at the first colon, obs-fold joined), so the
// accessors see what a hostile server can make them see.
// Checks: lookups are case-insensitive and return the first field; add/set/remove keep their
// contracts; Content-Length is never negative; Content-Range is consistent; a Content-Encoding
// is lower-cased and never "identity"; validators parse to tags that round-trip.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var status = 0
    var headers = HTTPHeaders()
    for rawLine in bytes.split(separator: 0x0A, omittingEmptySubsequences: false) {
        var end = rawLine.endIndex
        while end > rawLine.startIndex, rawLine[end - 1] == 0x0A || rawLine[end - 1] == 0x0D { end -= 1 }
        let line = String(decoding: rawLine[rawLine.startIndex..<end], as: UTF8.self)
        if line.hasPrefix("HTTP/") {
            let parts = line.split(separator: " ", maxSplits: 2)
            status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            headers = HTTPHeaders()
            continue
        }
        if line.first == " " || line.first == "\t", let last = headers.fields.last {
            headers.set(last.name, last.value + " " + line.trimmingCharacters(in: .whitespaces))
            continue
        }
        guard let colon = line.firstIndex(of: ":") else { continue }
        headers.add(
            line[..<colon].trimmingCharacters(in: .whitespaces),
            line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        if headers.count > 256 { break }
    }

    checkLookups(headers)
    checkAccessors(ResponseHead(status: status, headers: headers))
    return 0
}

private func checkLookups(_ headers: HTTPHeaders) {
    for field in headers.fields {
        let first = headers.fields.first { $0.name.lowercased() == field.name.lowercased() }
        require(headers[field.name] == first?.value, "lookup of \(field.name.debugDescription) is not the first match")
        if field.name.utf8.allSatisfy({ $0 < 0x80 }) {
            require(headers[field.name.uppercased()] == first?.value, "lookup of \(field.name.debugDescription) is case-sensitive")
        }
        require(headers.contains(field.name), "contains(\(field.name.debugDescription)) is false")
    }
    guard let victim = headers.fields.first else { return }
    var copy = headers
    copy.set(victim.name, "replaced")
    let lowered = victim.name.lowercased()
    require(copy.fields.filter { $0.name.lowercased() == lowered }.count == 1, "set left several \(victim.name.debugDescription)")
    require(copy[victim.name] == "replaced", "set did not replace \(victim.name.debugDescription)")
    copy.remove(victim.name)
    require(!copy.contains(victim.name), "remove left \(victim.name.debugDescription)")
    require(copy.count == headers.fields.filter { $0.name.lowercased() != lowered }.count, "remove dropped other fields")
}

private func checkAccessors(_ head: ResponseHead) {
    if let length = head.contentLength {
        require(length >= 0, "negative Content-Length \(length)")
    }
    if let range = head.contentRange, let first = range.first, let last = range.last {
        require(0 <= first && first <= last, "Content-Range \(first)-\(last)")
        if let total = range.completeLength { require(last < total, "Content-Range \(last)/\(total)") }
    }
    if let coding = head.contentEncoding {
        require(!coding.isEmpty && coding != "identity" && coding == coding.lowercased(), "content coding \(coding.debugDescription)")
    }
    let validators = head.validators
    if let etag = validators.etag {
        checkEntityTagRoundTrip(etag)
    }
    require(!validators.conflicts(with: validators), "validators conflict with themselves: \(validators)")
    if let ifRange = validators.ifRangeValue {
        require(!ifRange.contains("\r") && !ifRange.contains("\n"), "If-Range value with a line break: \(ifRange.debugDescription)")
    }
    require(head.isRedirect == [301, 302, 303, 307, 308].contains(head.status), "isRedirect for \(head.status)")
    _ = head.acceptsByteRanges
}
