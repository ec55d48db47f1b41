// Content-Range (and the neighbouring range/validator parsers) against arbitrary header values.
// Checks: nothing traps; whatever parses is internally consistent and survives a round trip.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = FuzzInput(data, size).remainingText
    checkContentRange(text)
    checkByteRangeSpec(text)
    checkEntityTag(text)
    return 0
}

private func checkContentRange(_ text: String) {
    guard let range = ContentRange(headerValue: text) else { return }
    if range.isUnsatisfied {
        // "bytes */N": both bounds absent and a length present ("*/*" must be refused).
        require(range.first == nil && range.last == nil, "half-open unsatisfied range from \(text.debugDescription)")
        require(range.completeLength != nil, "\"*/*\" accepted from \(text.debugDescription)")
        require(range.length == nil, "unsatisfied range has a length, from \(text.debugDescription)")
        return
    }
    guard let first = range.first, let last = range.last else { violated("unreachable") }
    require(first >= 0 && first <= last, "bounds \(first)-\(last) from \(text.debugDescription)")
    if let total = range.completeLength {
        require(total >= 0 && last < total, "last \(last) not below length \(total) from \(text.debugDescription)")
    }
    guard let length = range.length else { violated("no length for \(first)-\(last) from \(text.debugDescription)") }
    require(length >= 1 && length == last - first + 1, "length \(length) for \(first)-\(last)")

    // The canonical form of what was parsed must parse to the same value.
    let canonical = "bytes \(first)-\(last)/" + (range.completeLength.map(String.init) ?? "*")
    require(ContentRange(headerValue: canonical) == range, "round trip of \(canonical.debugDescription)")
}

private func checkByteRangeSpec(_ text: String) {
    guard let spec = try? ByteRangeSpec(parsing: text) else { return }
    switch spec {
    case .closed(let first, let last):
        require(first >= 0 && first <= last, "closed spec \(first)-\(last) from \(text.debugDescription)")
    case .from(let first):
        require(first >= 0, "open spec from \(first)")
    case .suffix(let length):
        require(length > 0, "suffix length \(length)")
    }
    // The header value is itself in the accepted syntax ("bytes=" prefix allowed).
    let again = try? ByteRangeSpec(parsing: spec.headerValue)
    require(again == spec, "round trip of \(spec.headerValue.debugDescription)")
}

private func checkEntityTag(_ text: String) {
    guard let tag = EntityTag(headerValue: text) else { return }
    let scalars = Array(tag.opaqueTag.unicodeScalars)
    require(
        scalars.count >= 2 && scalars.first == "\"" && scalars.last == "\"",
        "opaque tag not quoted: \(tag.opaqueTag.debugDescription)")
    require(
        !scalars.dropFirst().dropLast().contains("\"") && !scalars.contains { $0.value < 0x20 || $0.value == 0x7F },
        "quote or control character inside \(tag.opaqueTag.debugDescription)")
    checkEntityTagRoundTrip(tag)
    require(tag.weaklyMatches(tag), "a tag does not weakly match itself")
    require(tag.stronglyMatches(tag) == !tag.isWeak, "strong self-match wrong for \(tag.headerValue.debugDescription)")
}
