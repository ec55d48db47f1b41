import Foundation
import HaulChecksum
import HaulCore
import HaulJSON
import Testing

@testable import HaulStore

/// The record's JSON is `JSONEncoder`'s (sorted keys, slashes unescaped) byte for byte, reads back
/// as the same record, and older versions' records (`JSONEncoder` with sorted keys, slashes
/// escaped) read as the same record too; for records with every field set, none set, and strings
/// of every kind. Every stored property is written: a field added to the record cannot be dropped.
@Suite("ResumeRecordJSON")
struct ResumeRecordJSONTests {
    /// What this version writes.
    private static func reference(_ record: ResumeRecord) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(record), as: UTF8.self)
    }

    /// What older versions wrote (and what they read alike).
    private static func older(_ record: ResumeRecord) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(record), as: UTF8.self)
    }

    private static func read(_ text: String) throws -> ResumeRecord {
        try ResumeRecordCodec.decode(Data(text.utf8), "the record")
    }

    private static func identity(_ seed: Int) -> FileIdentity {
        var info = stat()
        info.st_dev = numericCast(66_305 + seed)
        info.st_ino = numericCast(UInt64.max - UInt64(seed))
        info.st_size = numericCast(seed * 4096)
        info.st_mtim.tv_sec = numericCast(1_764_633_600 + seed)
        info.st_mtim.tv_nsec = numericCast(seed * 7 % 1_000_000_000)
        return FileIdentity(info)
    }

    /// Every optional field set, each from `seed`.
    private static func full(_ seed: Int, text: String) -> ResumeRecord {
        var record = ResumeRecord(
            originalURL: "https://h.test/a/\(text)?q=\(seed)", finalURL: "https://cdn.test/\(text)", method: seed % 2 == 0 ? "GET" : "POST",
            range: "bytes=\(seed)-",
            validators: Validators(etag: EntityTag(isWeak: seed % 3 == 0, opaqueTag: text), lastModified: "Tue, 01 Dec 2026 00:00:\(seed % 60) GMT"),
            totalLength: Int64(seed) * 1_000_003, finalLength: Int64(seed) * 999, contentEncoding: "gzip", resourceStart: Int64(seed),
            syncedLength: Int64(seed) * 17, bootID: "boot-\(seed)", fileName: text, isAdopted: seed % 2 == 1,
            updatedAt: Date(timeIntervalSinceReferenceDate: 786_000_000 + Double(seed) * 0.123_456_789))
        record.finishedLength = Int64(seed) * 5
        record.finishedIdentity = identity(seed)
        record.partialIdentity = identity(seed + 1)
        record.keepsOwnMode = seed % 2 == 0
        record.segments = (0..<(seed % 4)).map { Segment(begin: Int64($0) << 20, next: (Int64($0) << 20) + 5, end: Int64($0 + 1) << 20) }
        record.segmentPrefix = Int64(seed) * 3
        record.volatileSegments = [Segment(begin: 0, end: Int64(seed))]
        record.volatileSegmentPrefix = 0
        record.hashState = SavedHashState(
            algorithm: ChecksumAlgorithm.allCases[seed % ChecksumAlgorithm.allCases.count], length: Int64(seed), openSSLVersion: 0x3000_0070,
            context: (0..<(seed % 40)).map { UInt8(($0 * 37 + seed) % 256) })
        record.serverDigest = ServerDigest(algorithm: .sha256, expectedHex: String(repeating: "ab", count: 32), source: "Digest: \(text)")
        record.replacesExistingFile = seed % 3 == 1
        record.connectionCaps = (0..<(seed % 3)).map { ConnectionCap(host: "\(text)-\($0).test", connections: $0 + seed % 5) }
        return record
    }

    /// Strings JSON must escape, and some it must not.
    private static let texts: [String] = [
        "plain.bin", "with space/and/slashes", "quote\"back\\slash", "tab\tnew\nline\rcr", "\u{08}\u{0C}\u{00}\u{01}\u{1F}\u{7F}",
        "é ü ß 東京 🚀", "\u{2028}\u{2029}", "e\u{301}", "%2F%00", "", "<>&'",
    ]

    @Test func everyFieldSetMatchesJSONEncoderByteForByte() throws {
        for (seed, text) in Self.texts.enumerated() {
            let record = Self.full(seed + 1, text: text)
            let written = try ResumeRecordCodec.encode(record)
            #expect(written == (try Self.reference(record)), "seed \(seed)")
            #expect(try Self.read(written) == record, "seed \(seed)")
            // An older version reads it, and this one reads what an older one wrote
            #expect(try JSONDecoder().decode(ResumeRecord.self, from: Data(written.utf8)) == record, "seed \(seed)")
            #expect(try Self.read(try Self.older(record)) == record, "seed \(seed)")
        }
    }

    @Test("GIVEN a record with every field set WHEN written THEN every stored property, nested ones too, is a key of its JSON and reads back")
    func noStoredPropertyIsDropped() throws {
        let record = Self.full(5, text: "f")
        let written = try JSONParser.parse(Data(try ResumeRecordCodec.encode(record).utf8))
        Self.expectEveryProperty(of: record, in: written, at: "record")
        #expect(try Self.read(try ResumeRecordCodec.encode(record)) == record)
    }

    /// Every stored property of `value` (a struct) is a key of `json`, recursively; an optional
    /// must be set (`full` sets them all: a new one must be set there too).
    private static func expectEveryProperty(of value: Any, in json: JSONValue, at path: String) {
        let mirror = Mirror(reflecting: value)
        switch mirror.displayStyle {
        case .optional:
            guard let wrapped = mirror.children.first?.value else {
                Issue.record("\(path) is nil: set it in `full` so that the test sees it written")
                return
            }
            expectEveryProperty(of: wrapped, in: json, at: path)
        case .struct:
            guard case .object(let fields) = json else {
                // A struct that encodes itself as one value (none in the record today).
                return
            }
            for child in mirror.children {
                guard let label = child.label else { continue }
                guard let field = fields[label] else {
                    Issue.record("\(path).\(label) is not written")
                    continue
                }
                expectEveryProperty(of: child.value, in: field, at: path + "." + label)
            }
        case .collection:
            guard case .array(let elements) = json, elements.count == mirror.children.count else {
                Issue.record("\(path) is not written as an array of \(mirror.children.count)")
                return
            }
            for (index, (child, element)) in zip(mirror.children, elements).enumerated() {
                expectEveryProperty(of: child.value, in: element, at: path + "[\(index)]")
            }
        default:
            return
        }
    }

    @Test func noOptionalFieldMatchesJSONEncoderToo() throws {
        for (seed, text) in Self.texts.enumerated() {
            let record = ResumeRecord(originalURL: text, finalURL: text, bootID: nil, updatedAt: Date(timeIntervalSinceReferenceDate: Double(seed)))
            let written = try ResumeRecordCodec.encode(record)
            #expect(written == (try Self.reference(record)), "seed \(seed)")
            #expect(try Self.read(written) == record)
            #expect(try Self.read(try Self.older(record)) == record)
        }
    }

    @Test func datesOfEveryKindMatch() throws {
        let seconds: [Double] = [0, 1, -1, 0.5, 786_000_000.123_456_7, 1e-7, 123_456_789_012.25, -978_307_200, 3.25e12, Date().timeIntervalSinceReferenceDate]
        for value in seconds {
            let record = ResumeRecord(originalURL: "u", finalURL: "u", updatedAt: Date(timeIntervalSinceReferenceDate: value))
            let written = try ResumeRecordCodec.encode(record)
            #expect(written == (try Self.reference(record)), "\(value)")
            #expect(try Self.read(written).updatedAt == record.updatedAt, "\(value)")
            #expect(try Self.read(try Self.older(record)).updatedAt == record.updatedAt, "\(value)")
        }
    }

    @Test func everyByteBelowASCIIDeleteIsEscapedAsJSONEncoderDoes() throws {
        for scalar in 0..<0x80 {
            let text = "a" + String(UnicodeScalar(UInt8(scalar))) + "b"
            let record = ResumeRecord(originalURL: text, finalURL: "u", updatedAt: Date(timeIntervalSinceReferenceDate: 0))
            #expect(try ResumeRecordCodec.encode(record) == (try Self.reference(record)), "byte \(scalar)")
            #expect(try Self.read(try Self.older(record)) == record, "byte \(scalar)")
        }
    }
}
