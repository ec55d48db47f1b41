/// Header bytes as text, without losing any: the bytes are UTF-8 when they are valid UTF-8, and
/// otherwise each byte is one character U+0000…U+00FF (ISO-8859-1, which RFC 9110 lets obs-text
/// be read as). Decoding invalid UTF-8 with replacement characters would make two different
/// values (two ETags that differ in such bytes) one and the same text.
package enum HeaderText {
    /// `bytes` as text: UTF-8 when valid, else one character per byte.
    package static func decode<Bytes: Collection>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        if let text = String(validating: bytes, as: UTF8.self) { return text }
        var text = ""
        text.unicodeScalars.append(contentsOf: bytes.map { Unicode.Scalar($0) })
        return text
    }
}
