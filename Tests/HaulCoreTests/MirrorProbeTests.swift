import Foundation
import Testing

@testable import HaulCore

@Suite("MirrorProbe and a mirror's segments")
struct MirrorProbeTests {
    func head(_ status: Int, _ headers: [(String, String)]) -> ResponseHead {
        ResponseHead(status: status, headers: HTTPHeaders(headers))
    }

    let total: Int64 = 10 << 20
    let window: Range<Int64> = (1 << 20)..<((1 << 20) + overlapCheckLength)

    /// An exact answer to the probe of `window`, from a file of `length` bytes.
    func probeAnswer(length: Int64? = nil, extra: [(String, String)] = [("ETag", "\"m1\"")]) -> ResponseHead {
        let last = window.upperBound - 1
        return head(
            206, [("Content-Range", "bytes \(window.lowerBound)-\(last)/\(length ?? total)"), ("Content-Length", "\(window.count)")] + extra)
    }

    @Test func onlyADigestOfTheWholeFileLetsMirrorsServeUnlessAllowed() {
        let sha = Checksum(algorithm: .sha256, expectedHex: String(repeating: "ab", count: 32))
        #expect(MirrorProbe.refusal(wholeFile: nil, allowsUnverified: false)?.contains("no digest of the whole file") == true)
        #expect(MirrorProbe.refusal(wholeFile: nil, allowsUnverified: true) == nil)
        #expect(MirrorProbe.refusal(wholeFile: sha, allowsUnverified: false) == nil)
        // A mirror publishing another digest of the same algorithm is another file; the same one, or another algorithm, is no objection
        let plan = MirrorProbe.plan(window: window, total: total)
        let other = Data(repeating: 7, count: 32).base64EncodedString()
        guard
            case .drop(let reason) = MirrorProbe.evaluate(
                probeAnswer(extra: [("ETag", "\"m1\""), ("Repr-Digest", "sha-256=:\(other):")]), for: plan, wholeFile: sha)
        else {
            Issue.record("a mirror with another digest was not dropped")
            return
        }
        #expect(reason.contains("another sha256"))
        let same = Data(repeating: 0xAB, count: 32).base64EncodedString()
        #expect(
            MirrorProbe.evaluate(probeAnswer(extra: [("ETag", "\"m1\""), ("Repr-Digest", "sha-256=:\(same):")]), for: plan, wholeFile: sha)
                == .compare(validators: Validators(etag: EntityTag(isWeak: false, opaqueTag: "\"m1\""))))
    }

    @Test func theWindowIsTheLast64KiBThePrimaryDelivered() {
        // GIVEN the primary's position at various points
        // THEN the probe compares the 64 KiB below it, waits while there are fewer, and takes what
        // there is once the primary's own part is done
        #expect(MirrorProbe.window(mainNext: 1 << 20, mainEnd: total) == ((1 << 20) - overlapCheckLength)..<(1 << 20))
        #expect(MirrorProbe.window(mainNext: 1000, mainEnd: total) == nil)
        #expect(MirrorProbe.window(mainNext: 0, mainEnd: 0) == nil)
        #expect(MirrorProbe.window(mainNext: 1000, mainEnd: 1000) == 0..<1000)
    }

    @Test func theProbeAsksForExactlyTheWindowWithoutIfRange() {
        // WHEN the probe of a window is planned
        let plan = MirrorProbe.plan(window: window, total: total)

        // THEN it is a closed range, with no validator to send, and the whole body is an overlap
        #expect(plan.range == "bytes=\(window.lowerBound)-\(window.upperBound - 1)")
        #expect(plan.ifRange == nil)
        #expect(plan.overlap == overlapCheckLength)
        // AND through the one place that sets Range and If-Range, a mirror's stale ones are replaced
        var stale = TransferRequest(url: URL(string: "http://m/f")!)
        stale.headers.set("If-Range", "\"old\"")
        let sent = stale.asking(for: plan)
        #expect(sent.headers["Range"] == plan.range && sent.headers["If-Range"] == nil)
    }

    @Test func anExactAnswerWithAValidatorIsCompared() {
        // GIVEN the probe
        let plan = MirrorProbe.plan(window: window, total: total)

        // WHEN the mirror answers exactly, with its own ETag (or only a Last-Modified date)
        let tagged = MirrorProbe.evaluate(probeAnswer(), for: plan)
        let dated = MirrorProbe.evaluate(probeAnswer(extra: [("Last-Modified", "Tue, 01 Sep 2026 10:00:00 GMT")]), for: plan)

        // THEN its bytes are to be compared, and it would be held to its own validator
        #expect(tagged == .compare(validators: Validators(etag: EntityTag(headerValue: "\"m1\""))))
        #expect(dated == .compare(validators: Validators(lastModified: "Tue, 01 Sep 2026 10:00:00 GMT")))
    }

    @Test func aMirrorOfAnotherLengthIsDropped() {
        // GIVEN the probe
        let plan = MirrorProbe.plan(window: window, total: total)

        // WHEN the mirror's file is shorter (206 with its total, or 200 with its length, or 416)
        let verdicts = [
            MirrorProbe.evaluate(probeAnswer(length: total - 1), for: plan),
            MirrorProbe.evaluate(head(200, [("Content-Length", "\(total - 1)"), ("ETag", "\"m1\"")]), for: plan),
            MirrorProbe.evaluate(head(416, [("Content-Range", "bytes */\(total - 1)")]), for: plan),
        ]

        // THEN each drops it, saying both lengths
        for verdict in verdicts {
            #expect(verdict == .drop("its file is \(total - 1) bytes, the primary's \(total)"))
        }
    }

    @Test func anyOtherDisagreementDropsTheMirror() {
        // GIVEN the probe
        let plan = MirrorProbe.plan(window: window, total: total)
        let answers: [(ResponseHead, String)] = [
            // the whole file (range ignored)
            (head(200, [("Content-Length", "\(total)"), ("ETag", "\"m1\"")]), "status 200"),
            // no validator If-Range could hold its segments to
            (probeAnswer(extra: [("ETag", "W/\"weak\"")]), "no strong ETag"),
            (probeAnswer(extra: []), "no strong ETag"),
            // another range
            (head(206, [("Content-Range", "bytes 0-65535/\(total)"), ("ETag", "\"m1\"")]), "did not send the range"),
            // compressed
            (probeAnswer(extra: [("ETag", "\"m1\""), ("Content-Encoding", "gzip")]), "compressed"),
            // an error
            (head(404, []), "status 404"),
        ]
        for (answer, says) in answers {
            // WHEN the mirror answers so
            let verdict = MirrorProbe.evaluate(answer, for: plan)

            // THEN it is dropped, and the message says why
            guard case .drop(let message) = verdict else {
                Issue.record("\(answer) was not refused: \(verdict)")
                continue
            }
            #expect(message.contains(says), "\(message)")
        }
    }

    @Test func aMirrorsSegmentIsHeldToEveryRuleButOnlyTheMirrorIsDropped() {
        // GIVEN a segment asked of an admitted mirror with its own validator
        let validators = Validators(etag: EntityTag(headerValue: "\"m1\""))
        let plan = ResumePlanner.segmentPlan(begin: 5 << 20, end: 6 << 20, validators: validators, total: total)
        let range = [("Content-Range", "bytes \(5 << 20)-\((6 << 20) - 1)/\(total)"), ("Content-Length", "\(1 << 20)")]

        // WHEN it answers exactly, or with another length, another version, a 200 or a 503
        let exact = SegmentVerdict.evaluate(head(206, range + [("ETag", "\"m1\"")]), for: plan, from: .mirror)
        let shorter = SegmentVerdict.evaluate(
            head(206, [("Content-Range", "bytes \(5 << 20)-\((6 << 20) - 1)/\(total - 1)"), ("ETag", "\"m1\"")]), for: plan, from: .mirror)
        let changed = SegmentVerdict.evaluate(head(206, range + [("ETag", "\"m2\"")]), for: plan, from: .mirror)
        let whole = SegmentVerdict.evaluate(head(200, [("Content-Length", "\(total)"), ("ETag", "\"m2\"")]), for: plan, from: .mirror)
        let busy = SegmentVerdict.evaluate(head(503, []), for: plan, from: .mirror)

        // THEN the exact one is written, a busy one is a throttle, and every other answer drops the
        // mirror (the primary's same answers restart the download)
        #expect(exact == .write)
        #expect(busy == .throttled)
        #expect(shorter == .dropSource("its file is \(total - 1) bytes, the primary's \(total)"))
        #expect(changed == .dropSource("its answer does not show the version it was admitted with (If-Range \"m1\")"))
        #expect(whole == .dropSource("it answered the range request bytes=\(5 << 20)-\((6 << 20) - 1) with status 200"))
        guard case .mismatch = SegmentVerdict.evaluate(head(206, range + [("ETag", "\"m2\"")]), for: plan) else {
            Issue.record("the primary's changed segment was not a mismatch")
            return
        }
    }

    @Test func aMirrorsRequestCarriesNothingOfThePrimarysCredentials() {
        // GIVEN the primary's request, after its redirects, with a login, a cookie, a key and a body
        var headers = HTTPHeaders()
        headers.set("Authorization", "Bearer primary-token")
        headers.set("Cookie", "session=1")
        headers.set("Proxy-Authorization", "Basic cHJveHk=")
        headers.set("X-Api-Key", "key")
        headers.set("User-Agent", "haul/test")
        headers.set("Accept-Encoding", "identity")
        headers.set("Range", "bytes=0-")
        let primary = TransferRequest(url: URL(string: "https://alice:pw@primary.example/f")!, method: "POST", headers: headers, body: [1, 2, 3])

        // WHEN a mirror's request is built
        let mirror = TransferRequest.mirror(URL(string: "https://mirror.example/f")!, askedLike: primary)

        // THEN it is a GET of the mirror's URL without a body, carrying only who asks and how
        #expect(mirror.url.absoluteString == "https://mirror.example/f")
        #expect(mirror.method == "GET" && mirror.body == nil)
        #expect(mirror.headers.fields.map(\.name).sorted() == ["Accept-Encoding", "User-Agent"])
        #expect(mirror.headers["User-Agent"] == "haul/test" && mirror.headers["Accept-Encoding"] == "identity")
    }
}
