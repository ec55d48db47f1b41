import Testing

@testable import HaulCore

/// When a download is split over several connections, as a table (no network).
@Suite("SegmentEligibility: the table")
struct SegmentEligibilityTests {
    static let total: Int64 = 64 << 20
    static let strong = Validators(etag: EntityTag(isWeak: false, opaqueTag: "v1"))

    static func body(
        total: Int64? = SegmentEligibilityTests.total, final: Int64? = SegmentEligibilityTests.total, validators: Validators = strong,
        overlap: Int64 = 0, encoding: String? = nil, start: Int64 = 0
    ) -> BodyPlan {
        BodyPlan(
            writeOffset: 0, overlap: overlap, expectedBodyLength: final, resourceStart: start, totalLength: total, finalLength: final,
            validators: validators, contentEncoding: encoding, restartReason: nil)
    }

    static func facts(
        _ body: BodyPlan = body(), status: Int = 200, ranges: Bool = true, whole: Bool = true, resumable: Bool = true, onDisk: Int64 = 0,
        resumes: Bool = false, busy: Bool = false, connections: Int? = nil, host: Bool = true
    ) -> SegmentEligibility {
        SegmentEligibility(
            body: body, status: status, acceptsByteRanges: ranges, wholeResource: whole, resumableOutput: resumable, bytesOnDisk: onDisk,
            resumesSegments: resumes, segmentsRunningOrDisabled: busy, connections: connections, hasHost: host)
    }

    static let rows: [(String, SegmentEligibility, Int?)] = [
        ("a big file with ranges and a strong tag adapts up to 16 connections", facts(), 15),
        ("-x 4 asks for four", facts(connections: 4), 3),
        ("-x 40 is capped at 16", facts(connections: 40), 15),
        ("-x 1 is one connection", facts(connections: 1), nil),
        ("a 206 is as good as Accept-Ranges", facts(status: 206, ranges: false), 15),
        ("no ranges advertised", facts(ranges: false), nil),
        ("a byte range is fetched in order", facts(whole: false), nil),
        ("standard output is written in order", facts(resumable: false), nil),
        ("no validator cannot guard If-Range", facts(body(validators: .none)), nil),
        ("a weak tag cannot guard If-Range", facts(body(validators: Validators(etag: EntityTag(isWeak: true, opaqueTag: "w")))), nil),
        ("a Last-Modified date can", facts(body(validators: Validators(lastModified: "Tue, 01 Dec 2026 10:00:00 GMT"))), 15),
        ("no length", facts(body(total: nil, final: nil)), nil),
        ("a compressed body", facts(body(encoding: "gzip")), nil),
        ("an overlap is being compared", facts(body(overlap: 65_536)), nil),
        ("a suffix starting inside the resource", facts(body(start: 1000)), nil),
        ("under 8 MiB left is not worth splitting", facts(body(total: 6 << 20, final: 6 << 20)), nil),
        ("but a resumed segmented download splits what is left", facts(body(total: 6 << 20, final: 6 << 20), resumes: true), 15),
        ("most of it already on disk", facts(onDisk: total - (4 << 20)), nil),
        ("segments already running or turned off", facts(busy: true), nil),
        ("no host to count connections by", facts(host: false), nil),
    ]

    @Test(arguments: rows)
    func theTable(why: String, facts: SegmentEligibility, helpers: Int?) {
        #expect(facts.helpers == helpers, "\(why)")
    }
}
