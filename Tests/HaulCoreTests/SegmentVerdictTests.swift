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

    @Test func aTagBeyondASCIIGuardsNoSegmentEvenShownByteForByte() {
        // GIVEN a segment of a file whose strong tag is "é" (beyond ASCII: it cannot be sent back as
        // the server wrote it, and "e" + U+0301, which Swift's String == calls equal, is another tag)
        let plan = ResumePlanner.segmentPlan(begin: 5000, end: 7000, validators: Validators(etag: EntityTag(headerValue: "\"\u{E9}\"")), total: 10_000)
        // THEN no If-Range is sent with it
        #expect(plan.ifRange == nil)
        // AND no 206 is taken for it, whichever form of the tag it shows: nothing proves the version
        for shown in ["\"e\u{301}\"", "\"\u{E9}\""] {
            guard case .mismatch = SegmentVerdict.evaluate(head(206, exactRange + [("ETag", shown)]), for: plan) else {
                Issue.record("a segment guarded by no validator was accepted (ETag \(shown))")
                return
            }
        }
    }
}
