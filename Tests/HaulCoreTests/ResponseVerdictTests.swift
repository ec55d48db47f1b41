import Testing

@testable import HaulCore

@Suite("ResponseVerdict: what a reply means for the bytes on disk")
struct ResponseVerdictTests {
    static let v1 = EntityTag(isWeak: false, opaqueTag: "\"v1\"")

    func head(_ status: Int, _ pairs: [(String, String)]) -> ResponseHead {
        ResponseHead(status: status, headers: HTTPHeaders(pairs))
    }

    func resumePlan(bytes: Int64 = 1000, total: Int64? = 5000, validators: Validators = Validators(etag: v1), adopted: Bool = false) -> RequestPlan {
        let partial = LocalPartial(bytesOnDisk: bytes, validators: validators, totalLength: total, isAdopted: adopted)
        guard case .send(let plan) = ResumePlanner.plan(target: .whole, partial: partial) else {
            fatalError("test setup: expected a request plan")
        }
        return plan
    }

    func freshPlan(_ target: DownloadTarget = .whole) -> RequestPlan {
        guard case .send(let plan) = ResumePlanner.plan(target: target, partial: nil) else {
            fatalError("test setup: expected a request plan")
        }
        return plan
    }

    @Test func freshOKWritesFromZero() {
        let verdict = ResponseVerdict.evaluate(head(200, [("Content-Length", "5000"), ("ETag", "\"v1\"")]), for: freshPlan())
        guard case .write(let body) = verdict else {
            Issue.record("expected write, got \(verdict)")
            return
        }
        #expect(body.writeOffset == 0)
        #expect(body.finalLength == 5000)
        #expect(body.validators.etag == Self.v1)
        #expect(body.restartReason == nil)
    }

    @Test func matching206Appends() {
        let verdict = ResponseVerdict.evaluate(
            head(206, [("Content-Range", "bytes 1000-4999/5000"), ("Content-Length", "4000"), ("ETag", "\"v1\"")]),
            for: resumePlan())
        guard case .write(let body) = verdict else {
            Issue.record("expected write, got \(verdict)")
            return
        }
        #expect(body.writeOffset == 1000)
        #expect(body.overlap == 0)
        #expect(body.expectedBodyLength == 4000)
        #expect(body.finalLength == 5000)
    }

    @Test func partialStartingElsewhereRestarts() {
        let verdict = ResponseVerdict.evaluate(head(206, [("Content-Range", "bytes 0-4999/5000")]), for: resumePlan())
        #expect(verdict == .restart(RestartReason(.unexpectedRange, "the server sent bytes from 0 where 1000 was asked for: restarting from byte 0")))
    }

    @Test func partialWithAnotherTotalRestarts() {
        let verdict = ResponseVerdict.evaluate(head(206, [("Content-Range", "bytes 1000-5999/6000"), ("ETag", "\"v1\"")]), for: resumePlan())
        guard case .restart(let reason) = verdict else {
            Issue.record("expected restart, got \(verdict)")
            return
        }
        #expect(reason.code == .lengthChanged)
    }

    @Test func partialWithUnknownTotalRestartsWhenRecordKnowsIt() {
        let verdict = ResponseVerdict.evaluate(head(206, [("Content-Range", "bytes 1000-4999/*")]), for: resumePlan())
        guard case .restart(let reason) = verdict else {
            Issue.record("expected restart, got \(verdict)")
            return
        }
        #expect(reason.code == .lengthChanged)
    }

    @Test func partialWithNewETagRestarts() {
        let verdict = ResponseVerdict.evaluate(head(206, [("Content-Range", "bytes 1000-4999/5000"), ("ETag", "\"v2\"")]), for: resumePlan())
        guard case .restart(let reason) = verdict else {
            Issue.record("expected restart, got \(verdict)")
            return
        }
        #expect(reason.code == .resourceChanged)
    }

    @Test func partialWithoutContentRangeRestarts() {
        let verdict = ResponseVerdict.evaluate(head(206, [("Content-Length", "4000")]), for: resumePlan())
        guard case .restart(let reason) = verdict else {
            Issue.record("expected restart, got \(verdict)")
            return
        }
        #expect(reason.code == .noUsableContentRange)
    }

    @Test func compressedPartialIsNeverSpliced() {
        let verdict = ResponseVerdict.evaluate(
            head(206, [("Content-Range", "bytes 1000-4999/5000"), ("Content-Encoding", "gzip"), ("ETag", "\"v1\"")]),
            for: resumePlan())
        guard case .restart(let reason) = verdict else {
            Issue.record("expected restart, got \(verdict)")
            return
        }
        #expect(reason.code == .compressedPartial)
    }

    @Test func okToAResumeRewritesFromZeroAndSaysWhy() {
        // GIVEN a resume guarded by "v1" WHEN the server answers 200 with the same tag THEN it ignored Range
        let same = ResponseVerdict.evaluate(head(200, [("Content-Length", "5000"), ("ETag", "\"v1\"")]), for: resumePlan())
        guard case .write(let body) = same else {
            Issue.record("expected write, got \(same)")
            return
        }
        #expect(body.writeOffset == 0)
        #expect(body.restartReason?.code == .serverIgnoredRange)
        // WHEN it answers 200 with another tag THEN the file changed
        let changed = ResponseVerdict.evaluate(head(200, [("Content-Length", "5000"), ("ETag", "\"v2\"")]), for: resumePlan())
        guard case .write(let body2) = changed else {
            Issue.record("expected write, got \(changed)")
            return
        }
        #expect(body2.restartReason?.code == .resourceChanged)
    }

    @Test func unsatisfiableWithMatchingTotalIsComplete() {
        let plan = resumePlan(bytes: 5000, total: 5000)
        #expect(ResponseVerdict.evaluate(head(416, [("Content-Range", "bytes */5000")]), for: plan) == .complete)
    }

    @Test func unsatisfiableWithOtherTotalRestarts() {
        let plan = resumePlan(bytes: 5000, total: 5000)
        guard case .restart(let reason) = ResponseVerdict.evaluate(head(416, [("Content-Range", "bytes */4000")]), for: plan) else {
            Issue.record("expected restart")
            return
        }
        #expect(reason.code == .rangeNotSatisfiable)
    }

    @Test func unsatisfiableWithoutContentRangeRestarts() {
        let plan = resumePlan(bytes: 5000, total: 5000)
        guard case .restart(let reason) = ResponseVerdict.evaluate(head(416, []), for: plan) else {
            Issue.record("expected restart")
            return
        }
        #expect(reason.code == .rangeNotSatisfiable)
    }

    @Test func unsatisfiableForAFreshRequestIsAnHTTPError() {
        #expect(ResponseVerdict.evaluate(head(416, []), for: freshPlan(.range(.from(first: 10)))) == .fail(.httpStatus(416)))
    }

    @Test func errorStatusesFail() {
        for status in [400, 401, 403, 404, 500, 503] {
            #expect(ResponseVerdict.evaluate(head(status, [("Content-Length", "10")]), for: freshPlan()) == .fail(.httpStatus(status)))
        }
    }

    @Test func overlapResumeKeepsTheOverlapToCompare() {
        let plan = resumePlan(bytes: 100_000, total: 200_000, validators: .none)
        let verdict = ResponseVerdict.evaluate(head(206, [("Content-Range", "bytes 34464-199999/200000")]), for: plan)
        guard case .write(let body) = verdict else {
            Issue.record("expected write, got \(verdict)")
            return
        }
        #expect(body.writeOffset == 34464)
        #expect(body.overlap == 65536)
    }

    @Test func adoptedFileIsComparedWithAWholeBody() {
        // GIVEN a file another tool left WHEN the server ignores Range THEN the whole body is
        // compared with the file (its length is the overlap) and only the rest is written
        let plan = resumePlan(bytes: 100_000, total: nil, validators: .none, adopted: true)
        guard case .write(let body) = ResponseVerdict.evaluate(head(200, [("Content-Length", "200000")]), for: plan) else {
            Issue.record("expected write")
            return
        }
        #expect(body.writeOffset == 0)
        #expect(body.overlap == 100_000)
        #expect(body.finalLength == 200_000)
        // AND a body shorter than the file leaves it alone; a compressed one restarts (the runner keeps the file)
        guard case .fail(.cannotResume) = ResponseVerdict.evaluate(head(200, [("Content-Length", "50000")]), for: plan) else {
            Issue.record("expected the file to be left alone")
            return
        }
        guard case .restart = ResponseVerdict.evaluate(head(200, [("Content-Length", "200000"), ("Content-Encoding", "gzip")]), for: plan) else {
            Issue.record("expected restart")
            return
        }
        guard case .fail(.cannotResume) = ResponseVerdict.evaluate(head(416, [("Content-Range", "bytes */50000")]), for: plan) else {
            Issue.record("expected the file to be left alone")
            return
        }
    }

    @Test func rangeTargetIgnoredIsCannotResume() {
        guard case .fail(.cannotResume) = ResponseVerdict.evaluate(head(200, [("Content-Length", "5000")]), for: freshPlan(.range(.closed(first: 0, last: 99))))
        else {
            Issue.record("expected cannotResume")
            return
        }
    }

    @Test func suffixRangeLearnsItsStartFromTheServer() {
        let verdict = ResponseVerdict.evaluate(head(206, [("Content-Range", "bytes 4900-4999/5000")]), for: freshPlan(.range(.suffix(length: 100))))
        guard case .write(let body) = verdict else {
            Issue.record("expected write, got \(verdict)")
            return
        }
        #expect(body.resourceStart == 4900)
        #expect(body.finalLength == 100)
    }

    @Test func closedRangeAnsweredWithAnotherEndRestarts() {
        let verdict = ResponseVerdict.evaluate(head(206, [("Content-Range", "bytes 0-199/5000")]), for: freshPlan(.range(.closed(first: 0, last: 99))))
        guard case .restart(let reason) = verdict else {
            Issue.record("expected restart, got \(verdict)")
            return
        }
        #expect(reason.code == .unexpectedRange)
    }

    @Test func partialToAPlainRequestIsAProtocolViolation() {
        guard case .fail(.protocolViolation) = ResponseVerdict.evaluate(head(206, [("Content-Range", "bytes 0-9/10")]), for: freshPlan()) else {
            Issue.record("expected protocol violation")
            return
        }
    }

    @Test func contentLengthDisagreeingWithContentRangeFails() {
        guard
            case .fail(.protocolViolation) = ResponseVerdict.evaluate(
                head(206, [("Content-Range", "bytes 1000-4999/5000"), ("Content-Length", "10"), ("ETag", "\"v1\"")]), for: resumePlan())
        else {
            Issue.record("expected protocol violation")
            return
        }
    }
}
