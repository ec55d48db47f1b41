import Testing

@testable import HaulCore

@Suite("ResumePlanner: what to send for what is on disk")
struct ResumePlanTests {
    let etag = Validators(etag: EntityTag(isWeak: false, opaqueTag: "\"v1\""))

    @Test func freshWholeDownloadSendsNoRange() throws {
        // GIVEN nothing on disk WHEN planning THEN a plain request
        guard case .send(let plan) = ResumePlanner.plan(target: .whole, partial: nil) else {
            Issue.record("expected a request")
            return
        }
        #expect(plan.range == nil)
        #expect(plan.ifRange == nil)
        #expect(plan.isResume == false)
    }

    @Test func emptyPartialIsAFreshStart() {
        let partial = LocalPartial(bytesOnDisk: 0, validators: etag)
        guard case .send(let plan) = ResumePlanner.plan(target: .whole, partial: partial) else {
            Issue.record("expected a request")
            return
        }
        #expect(plan.range == nil)
    }

    @Test func resumeWithStrongETagUsesIfRange() {
        // GIVEN 1000 bytes from version "v1" WHEN planning THEN Range from 1000 guarded by the tag
        let partial = LocalPartial(bytesOnDisk: 1000, validators: etag, totalLength: 5000)
        guard case .send(let plan) = ResumePlanner.plan(target: .whole, partial: partial) else {
            Issue.record("expected a request")
            return
        }
        #expect(plan.range == "bytes=1000-")
        #expect(plan.ifRange == "\"v1\"")
        #expect(plan.overlap == 0)
        #expect(plan.requestedFirst == 1000)
    }

    @Test func weakETagFallsBackToLastModified() {
        let validators = Validators(etag: EntityTag(isWeak: true, opaqueTag: "\"w\""), lastModified: "Sun, 06 Nov 1994 08:49:37 GMT")
        let partial = LocalPartial(bytesOnDisk: 10, validators: validators)
        guard case .send(let plan) = ResumePlanner.plan(target: .whole, partial: partial) else {
            Issue.record("expected a request")
            return
        }
        #expect(plan.ifRange == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(plan.overlap == 0)
    }

    @Test func noValidatorRefetchesOverlap() {
        // GIVEN 1 MiB with no validator WHEN planning THEN ask 64 KiB earlier and compare them
        let partial = LocalPartial(bytesOnDisk: 1 << 20)
        guard case .send(let plan) = ResumePlanner.plan(target: .whole, partial: partial) else {
            Issue.record("expected a request")
            return
        }
        #expect(plan.range == "bytes=\((1 << 20) - 65536)-")
        #expect(plan.ifRange == nil)
        #expect(plan.overlap == 65536)
    }

    @Test func smallPartialWithoutValidatorOverlapsEverything() {
        let partial = LocalPartial(bytesOnDisk: 100)
        guard case .send(let plan) = ResumePlanner.plan(target: .whole, partial: partial) else {
            Issue.record("expected a request")
            return
        }
        #expect(plan.range == "bytes=0-")
        #expect(plan.overlap == 100)
    }

    @Test func adoptedFileIsAlwaysProvenByOverlapEvenWithValidators() {
        let partial = LocalPartial(bytesOnDisk: 200_000, validators: etag, isAdopted: true)
        guard case .send(let plan) = ResumePlanner.plan(target: .whole, partial: partial) else {
            Issue.record("expected a request")
            return
        }
        #expect(plan.ifRange == nil)
        #expect(plan.overlap == 65536)
    }

    @Test func compressedPartialIsDiscarded() {
        let partial = LocalPartial(bytesOnDisk: 10, validators: etag, contentEncoding: "gzip")
        guard case .discardPartial(let reason) = ResumePlanner.plan(target: .whole, partial: partial) else {
            Issue.record("expected discard")
            return
        }
        #expect(reason.code == .compressedPartial)
    }

    @Test func closedRangeResumesInsideTheRange() {
        // GIVEN bytes 100...149 of a 100-199 range on disk WHEN planning THEN ask 150-199
        let partial = LocalPartial(bytesOnDisk: 50, resourceStart: 100, validators: etag, totalLength: 1000)
        guard case .send(let plan) = ResumePlanner.plan(target: .range(.closed(first: 100, last: 199)), partial: partial) else {
            Issue.record("expected a request")
            return
        }
        #expect(plan.range == "bytes=150-199")
        #expect(plan.requestedLast == 199)
    }

    @Test func closedRangeFullyOnDiskIsComplete() {
        let partial = LocalPartial(bytesOnDisk: 100, resourceStart: 100, validators: etag, totalLength: 1000)
        #expect(ResumePlanner.plan(target: .range(.closed(first: 100, last: 199)), partial: partial) == .alreadyComplete)
    }

    @Test func freshRangeFormsUseTheUsersSpec() {
        for (spec, header) in [(ByteRangeSpec.closed(first: 0, last: 9), "bytes=0-9"), (.from(first: 5), "bytes=5-"), (.suffix(length: 7), "bytes=-7")] {
            guard case .send(let plan) = ResumePlanner.plan(target: .range(spec), partial: nil) else {
                Issue.record("expected a request")
                return
            }
            #expect(plan.range == header)
        }
    }
}
