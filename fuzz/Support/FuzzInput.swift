// Shared by every fuzz target: turns libFuzzer's byte buffer into typed values, and reports
// broken invariants so libFuzzer stops, prints the input and keeps it as a crash file.

/// A cursor over the fuzzer's bytes. Reading past the end yields zeros / empty values, so a
/// short input still produces a complete (if dull) case instead of being thrown away.
struct FuzzInput {
    private let bytes: [UInt8]
    private var position = 0

    init(_ data: UnsafePointer<UInt8>, _ size: Int) {
        bytes = Array(UnsafeBufferPointer(start: data, count: size))
    }

    var isExhausted: Bool { position >= bytes.count }

    /// Everything not consumed yet, as UTF-8 (invalid sequences become U+FFFD, like the engine does).
    var remainingText: String {
        String(decoding: bytes[min(position, bytes.count)...], as: UTF8.self)
    }

    /// Everything not consumed yet, as bytes.
    var remainingBytes: [UInt8] {
        Array(bytes[min(position, bytes.count)...])
    }

    mutating func byte() -> UInt8 {
        guard position < bytes.count else { return 0 }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func bool() -> Bool { byte() & 1 == 1 }

    mutating func uint64() -> UInt64 {
        var value: UInt64 = 0
        for _ in 0..<8 { value = value << 8 | UInt64(byte()) }
        return value
    }

    /// A value in `range`, biased towards the low end and the edges, which is where bugs live.
    mutating func int64(in range: ClosedRange<Int64>) -> Int64 {
        let span = UInt64(bitPattern: range.upperBound &- range.lowerBound)
        let raw: UInt64
        switch byte() % 4 {
        case 0: raw = UInt64(byte())
        case 1: raw = UInt64(byte()) << 8 | UInt64(byte())
        case 2: raw = span &- UInt64(byte())
        default: raw = uint64()
        }
        let offset = span == UInt64.max ? raw : raw % (span + 1)
        return range.lowerBound &+ Int64(bitPattern: offset)
    }

    /// A length-prefixed string of at most `maxBytes` bytes, decoded leniently as UTF-8.
    mutating func string(maxBytes: Int = 64) -> String {
        let count = min(Int(byte()), maxBytes)
        var chunk: [UInt8] = []
        for _ in 0..<count where position < bytes.count { chunk.append(byte()) }
        return String(decoding: chunk, as: UTF8.self)
    }

    /// One of `choices`.
    mutating func pick<T>(_ choices: [T]) -> T {
        choices[Int(byte()) % choices.count]
    }
}

/// Reports a broken invariant: libFuzzer sees the trap, prints the stack and saves the input.
func violated(_ message: @autoclosure () -> String, file: StaticString = #file, line: UInt = #line) -> Never {
    fatalError("fuzz invariant violated: \(message())", file: file, line: line)
}

func require(_ condition: Bool, _ message: @autoclosure () -> String, file: StaticString = #file, line: UInt = #line) {
    if !condition { violated(message(), file: file, line: line) }
}

/// A parsed tag must parse back from its own header value, except for one known quirk
/// (reported, not a safety problem): EntityTag compares Characters, so a quote that fuses with
/// its neighbour into one grapheme (a combining mark such as U+0739 after the opening quote, a
/// prepended mark such as U+0600 before the closing one) is not seen as a quote.
func checkEntityTagRoundTrip(_ tag: EntityTag) {
    let graphemes = Array(tag.opaqueTag)
    guard graphemes.first == "\"" && graphemes.last == "\"" else { return }
    let again = EntityTag(headerValue: tag.headerValue)
    require(again == tag, "round trip of \(tag.headerValue.debugDescription) gave \(String(describing: again))")
}
