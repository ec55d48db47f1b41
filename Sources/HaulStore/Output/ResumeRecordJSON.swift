import Foundation
import HaulChecksum
import HaulCore

/// The resume record's JSON, written by hand: the bytes `JSONEncoder` writes with sorted keys
/// (the record's synthesized `Codable`: a nil optional is left out, `Date` is its seconds since
/// 2001, `[UInt8]` an array of numbers), at a small part of the cost. Every small file's finished
/// mark is one of these, and `JSONEncoder` spent about 60 µs on each (4.5% of a batch's CPU).
/// `ResumeRecordJSONTests` holds it to `JSONEncoder`'s output byte for byte; `JSONDecoder` reads it.
enum ResumeRecordJSON {
    static func encode(_ record: ResumeRecord) -> String {
        var object = Object()
        object.add("bootID", record.bootID.map(string))
        object.add("connectionCaps", record.connectionCaps.map(connectionCaps))
        object.add("contentEncoding", record.contentEncoding.map(string))
        object.add("fileName", record.fileName.map(string))
        object.add("finalLength", record.finalLength.map(number))
        object.add("finalURL", string(record.finalURL))
        object.add("finishedIdentity", record.finishedIdentity.map(identity))
        object.add("finishedLength", record.finishedLength.map(number))
        object.add("hashState", record.hashState.map(hashState))
        object.add("isAdopted", bool(record.isAdopted))
        object.add("keepsOwnMode", record.keepsOwnMode.map(bool))
        object.add("method", string(record.method))
        object.add("originalURL", string(record.originalURL))
        object.add("partialIdentity", record.partialIdentity.map(identity))
        object.add("range", record.range.map(string))
        object.add("replacesExistingFile", record.replacesExistingFile.map(bool))
        object.add("resourceStart", number(record.resourceStart))
        object.add("segmentPrefix", record.segmentPrefix.map(number))
        object.add("segments", record.segments.map(segments))
        object.add("serverDigest", record.serverDigest.map(serverDigest))
        object.add("syncedLength", number(record.syncedLength))
        object.add("totalLength", record.totalLength.map(number))
        object.add("updatedAt", date(record.updatedAt))
        object.add("validators", validators(record.validators))
        object.add("version", number(record.version))
        object.add("volatileSegmentPrefix", record.volatileSegmentPrefix.map(number))
        object.add("volatileSegments", record.volatileSegments.map(segments))
        return object.text
    }

    /// An object's members, added in key order (the order `sortedKeys` gives: every key here is
    /// ASCII, compared byte by byte).
    private struct Object {
        private var members = "{"

        mutating func add(_ key: String, _ value: String?) {
            guard let value else { return }
            if members.utf8.count > 1 { members += "," }
            members += "\"" + key + "\":" + value
        }

        var text: String { members + "}" }
    }

    private static func validators(_ validators: Validators) -> String {
        var object = Object()
        object.add("etag", validators.etag.map(entityTag))
        object.add("lastModified", validators.lastModified.map(string))
        return object.text
    }

    private static func entityTag(_ tag: EntityTag) -> String {
        var object = Object()
        object.add("isWeak", bool(tag.isWeak))
        object.add("opaqueTag", string(tag.opaqueTag))
        return object.text
    }

    private static func identity(_ identity: FileIdentity) -> String {
        var object = Object()
        object.add("device", number(identity.device))
        object.add("inode", number(identity.inode))
        object.add("modifiedNanoseconds", number(identity.modifiedNanoseconds))
        object.add("modifiedSeconds", number(identity.modifiedSeconds))
        object.add("size", number(identity.size))
        return object.text
    }

    private static func segments(_ segments: [Segment]) -> String {
        "["
            + segments.map { segment in
                var object = Object()
                object.add("begin", number(segment.begin))
                object.add("end", number(segment.end))
                object.add("next", number(segment.next))
                return object.text
            }.joined(separator: ",") + "]"
    }

    private static func connectionCaps(_ caps: [ConnectionCap]) -> String {
        "["
            + caps.map { cap in
                var object = Object()
                object.add("connections", number(cap.connections))
                object.add("host", string(cap.host))
                return object.text
            }.joined(separator: ",") + "]"
    }

    private static func hashState(_ state: SavedHashState) -> String {
        var object = Object()
        object.add("algorithm", string(state.algorithm.rawValue))
        object.add("context", "[" + state.context.map { String($0) }.joined(separator: ",") + "]")
        object.add("length", number(state.length))
        object.add("openSSLVersion", number(state.openSSLVersion))
        return object.text
    }

    private static func serverDigest(_ digest: ServerDigest) -> String {
        var object = Object()
        object.add("algorithm", string(digest.algorithm.rawValue))
        object.add("expectedHex", string(digest.expectedHex))
        object.add("source", string(digest.source))
        return object.text
    }

    private static func number<T: BinaryInteger>(_ value: T) -> String { String(value) }

    private static func bool(_ value: Bool) -> String { value ? "true" : "false" }

    /// A `Date` as `JSONEncoder`'s default strategy writes it: its seconds since 2001 as a number,
    /// with no fraction when it has none.
    private static func date(_ date: Date) -> String {
        let seconds = date.timeIntervalSinceReferenceDate
        if seconds.rounded(.towardZero) == seconds, abs(seconds) < 1e15 { return String(Int64(seconds)) }
        return seconds.description
    }

    /// A JSON string as `JSONEncoder` writes one: `"`, `\` and `/` escaped, the short escapes for
    /// backspace, form feed, line feed, carriage return and tab, `\u00XX` for other controls,
    /// everything else as its UTF-8.
    static func string(_ value: String) -> String {
        var bytes: [UInt8] = [UInt8(ascii: "\"")]
        bytes.reserveCapacity(value.utf8.count + 2)
        let hex = Array("0123456789abcdef".utf8)
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): bytes += [UInt8(ascii: "\\"), byte]
            case 0x08: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "b")]
            case 0x0C: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "f")]
            case 0x0A: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20: bytes += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
        return String(decoding: bytes, as: UTF8.self)
    }
}
