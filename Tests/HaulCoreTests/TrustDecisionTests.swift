import Foundation
import Testing

@testable import HaulCore

/// The pure decisions behind the "trust by construction" fixes: one verdict for every connection,
/// one place that sets Range / If-Range, and the https → http rule.
@Suite("Trust decisions")
struct TrustDecisionTests {
    static let etag = Validators(etag: EntityTag(headerValue: "\"v1\""))
    static let total: Int64 = 10_000

    func head(_ status: Int, _ headers: [(String, String)]) -> ResponseHead {
        ResponseHead(status: status, headers: HTTPHeaders(headers))
    }

    @Test func partialWithoutTheGuardingValidatorRestarts() {
        // GIVEN a resume guarded by an ETag
        let partial = LocalPartial(bytesOnDisk: 4000, validators: Self.etag, totalLength: Self.total)
        guard case .send(let plan) = ResumePlanner.plan(target: .whole, partial: partial) else {
            Issue.record("expected a request")
            return
        }
        #expect(plan.ifRange == "\"v1\"")
        // WHEN the server answers 206 without any validator
        let verdict = ResponseVerdict.evaluate(head(206, [("Content-Range", "bytes 4000-9999/10000"), ("Content-Length", "6000")]), for: plan)
        // THEN the bytes are not appended: the download restarts
        guard case .restart(let reason) = verdict else {
            Issue.record("expected a restart, got \(verdict)")
            return
        }
        #expect(reason.code == .validatorMissing)
        // AND with the validator shown, the same response is written
        let shown = ResponseVerdict.evaluate(
            head(206, [("Content-Range", "bytes 4000-9999/10000"), ("Content-Length", "6000"), ("ETag", "\"v1\"")]), for: plan)
        guard case .write(let body) = shown else {
            Issue.record("expected a write, got \(shown)")
            return
        }
        #expect(body.writeOffset == 4000)
    }

    @Test func partialFromAnotherURLIsProvenByAnOverlapToo() {
        // GIVEN a partial with an ETag that came from another URL
        var partial = LocalPartial(bytesOnDisk: 200_000, validators: Self.etag, totalLength: 1_000_000)
        partial.needsOverlapProof = true
        // WHEN the resume is planned
        guard case .send(let plan) = ResumePlanner.plan(target: .whole, partial: partial) else {
            Issue.record("expected a request")
            return
        }
        // THEN it still sends If-Range, and re-fetches 64 KiB to compare
        #expect(plan.ifRange == "\"v1\"")
        #expect(plan.overlap == overlapCheckLength)
        #expect(plan.range == "bytes=\(200_000 - overlapCheckLength)-")
    }

    @Test func segmentResponsesAreJudgedByTheSameVerdict() {
        let plan = ResumePlanner.segmentPlan(begin: 5000, end: 7000, validators: Self.etag, total: Self.total)
        #expect(plan.range == "bytes=5000-6999")
        #expect(plan.ifRange == "\"v1\"")
        let good = [("Content-Range", "bytes 5000-6999/10000"), ("Content-Length", "2000"), ("ETag", "\"v1\"")]
        #expect(SegmentVerdict.evaluate(head(206, good), for: plan) == .write)
        // a 206 without the validator, another version, a whole body, a wrong range, a compressed
        // range, another length: each stops the segmented download
        let bad: [(Int, [(String, String)])] = [
            (206, [("Content-Range", "bytes 5000-6999/10000"), ("Content-Length", "2000")]),
            (206, [("Content-Range", "bytes 5000-6999/10000"), ("ETag", "\"v2\"")]),
            (200, [("Content-Length", "10000"), ("ETag", "\"v1\"")]),
            (206, [("Content-Range", "bytes 5000-5999/10000"), ("ETag", "\"v1\"")]),
            (206, [("Content-Range", "bytes 5000-6999/10000"), ("ETag", "\"v1\""), ("Content-Encoding", "gzip")]),
            (206, [("Content-Range", "bytes 5000-6999/20000"), ("ETag", "\"v1\"")]),
            (404, []),
        ]
        for (status, headers) in bad {
            guard case .mismatch = SegmentVerdict.evaluate(head(status, headers), for: plan) else {
                Issue.record("\(status) \(headers) was not refused")
                continue
            }
        }
        #expect(SegmentVerdict.evaluate(head(503, []), for: plan) == .throttled)
        #expect(SegmentVerdict.evaluate(head(429, []), for: plan) == .throttled)
    }

    @Test func rangeHeadersComeOnlyFromThePlan() throws {
        // GIVEN a request that carries a stale Range and If-Range
        var headers = HTTPHeaders()
        headers.add("Range", "bytes=0-1")
        headers.add("If-Range", "\"old\"")
        headers.add("X-Keep", "1")
        let request = TransferRequest(url: try #require(URL(string: "http://a.test/f")), headers: headers)
        // WHEN it asks for a segment, and for a fresh whole download
        let segment = request.asking(for: ResumePlanner.segmentPlan(begin: 0, end: 100, validators: Self.etag, total: 1000))
        guard case .send(let fresh) = ResumePlanner.plan(target: .whole, partial: nil) else {
            Issue.record("expected a request")
            return
        }
        let whole = request.asking(for: fresh)
        // THEN only the plan's headers are there
        #expect(segment.headers["Range"] == "bytes=0-99")
        #expect(segment.headers["If-Range"] == "\"v1\"")
        #expect(segment.headers["X-Keep"] == "1")
        #expect(whole.headers["Range"] == nil)
        #expect(whole.headers["If-Range"] == nil)
    }

    @Test func httpsToHttpIsRefusedUnlessAllowed() throws {
        var headers = HTTPHeaders()
        headers.add("X-Api-Key", "k")
        let first = TransferRequest(url: try #require(URL(string: "https://a.test/f")), headers: headers)
        let redirect = head(302, [("Location", "http://b.test/f")])
        // WHEN redirected from https to http by default THEN it is refused with a way to allow it
        do {
            _ = try RedirectPolicy().nextRequest(after: first, head: redirect, originalOrigin: first.origin, visited: [first.url])
            Issue.record("the downgrade was followed")
        } catch {
            #expect(error.text.settings == [.allowsHTTPRedirect])
            #expect(error.message.hasSuffix("allow it with allowsHTTPRedirect"), "\(error.message)")
        }
        // AND allowed explicitly it is followed
        let next = try RedirectPolicy(allowsDowngrade: true).nextRequest(after: first, head: redirect, originalOrigin: first.origin, visited: [first.url])
        #expect(next.url.absoluteString == "http://b.test/f")
        // AND http -> https, https -> https stay allowed by default
        let upgrade = TransferRequest(url: try #require(URL(string: "http://a.test/f")))
        _ = try RedirectPolicy().nextRequest(
            after: upgrade, head: head(302, [("Location", "https://a.test/g")]), originalOrigin: upgrade.origin, visited: [upgrade.url])
    }
}
