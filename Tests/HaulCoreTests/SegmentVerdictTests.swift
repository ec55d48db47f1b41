import Foundation
import Testing

@testable import HaulCore

/// Findings of the SegmentFuzz target (fuzz/README.md), each pinned by a test.
@Suite("SegmentVerdict")
struct SegmentVerdictTests {
    func head(_ status: Int, _ headers: [(String, String)]) -> ResponseHead {
        ResponseHead(status: status, headers: HTTPHeaders(headers))
    }

    /// An exact answer to bytes 5000-6999 of a 10000-byte file.
    let exactRange = [("Content-Range", "bytes 5000-6999/10000"), ("Content-Length", "2000")]

    @Test(arguments: [Validators.none, Validators(etag: EntityTag(headerValue: "W/\"v1\"")), Validators(lastModified: "yesterday")])
    func aSegmentWithoutIfRangeIsNeverWritten(_ validators: Validators) {
        // GIVEN a segment of a version with no validator that If-Range can carry
        let plan = ResumePlanner.segmentPlan(begin: 5000, end: 7000, validators: validators, total: 10_000)
        #expect(plan.ifRange == nil)

        // WHEN the server answers 206 with exactly the bytes asked for (and the same weak tag, if any)
        let shown = validators.etag.map { [("ETag", $0.headerValue)] } ?? []
        let verdict = SegmentVerdict.evaluate(head(206, exactRange + shown), for: plan)

        // THEN nothing proves them to be the same version: the segmented download stops
        guard case .mismatch(let reason) = verdict else {
            Issue.record("a segment without If-Range was accepted: \(verdict)")
            return
        }
        #expect(reason.code == .validatorMissing)
    }

    @Test func aSegmentShowingACanonicallyEquivalentTagIsAnotherVersion() {
        // GIVEN a segment guarded by the strong tag "é" (precomposed)
        let plan = ResumePlanner.segmentPlan(begin: 5000, end: 7000, validators: Validators(etag: EntityTag(headerValue: "\"\u{E9}\"")), total: 10_000)
        #expect(plan.ifRange == "\"\u{E9}\"")

        // WHEN the 206 shows "e" + U+0301, which Swift's String == calls equal
        let verdict = SegmentVerdict.evaluate(head(206, exactRange + [("ETag", "\"e\u{301}\"")]), for: plan)

        // THEN it is not the tag If-Range named: the bytes are not written
        guard case .mismatch = verdict else {
            Issue.record("a segment with another entity tag was accepted")
            return
        }
        // AND the tag byte for byte is written
        #expect(SegmentVerdict.evaluate(head(206, exactRange + [("ETag", "\"\u{E9}\"")]), for: plan) == .write)
    }
}
