import Testing

@testable import HaulCore

@Suite("SegmentSources")
struct SegmentSourcesTests {
    let primaryValidators = Validators(etag: EntityTag(headerValue: "\"primary\""))
    let mirrorValidators = Validators(etag: EntityTag(headerValue: "\"mirror\""))

    @Test func connectionsStartedTogetherSpreadOverEverySource() {
        // GIVEN the primary (holding the runner's connection) and two unproven mirrors
        var sources = SegmentSources(primaryValidators: primaryValidators, mirrorCount: 2)

        // WHEN five connections are started at once
        let assignments = (0..<5).compactMap { _ in sources.assign() }

        // THEN each mirror is probed by one, the next goes to the primary, and the last two await
        // the probes: two connections per source
        #expect(
            assignments == [
                .probe(source: 1), .probe(source: 2), .fetch(source: 0, validators: primaryValidators), .awaitProbe(source: 1),
                .awaitProbe(source: 2),
            ])
        #expect(sources.sources.map(\.connections) == [2, 2, 2])
    }

    @Test func anAdmittedMirrorIsFetchedWithItsOwnValidators() {
        // GIVEN a mirror being probed
        var sources = SegmentSources(primaryValidators: primaryValidators, mirrorCount: 1)
        let probe = sources.assign()

        // WHEN its probe admits it, and two more connections start
        sources.admit(1, validators: mirrorValidators)
        let more = [sources.assign(), sources.assign()]

        // THEN a connection awaiting it learns the mirror's validators, and new ones fetch with them
        #expect(probe == .probe(source: 1))
        #expect(sources.standing(of: 1) == .admitted(mirrorValidators))
        #expect(more == [.fetch(source: 0, validators: primaryValidators), .fetch(source: 1, validators: mirrorValidators)])
    }

    @Test func aDroppedMirrorIsNeverAssignedAgainAndThePrimaryNeverDropped() {
        // GIVEN a mirror probed and dropped
        var sources = SegmentSources(primaryValidators: primaryValidators, mirrorCount: 1)
        let probe = sources.assign()
        let firstDrop = sources.drop(1, reason: "its bytes differ")
        if let probe { sources.release(probe) }
        #expect(firstDrop)

        // WHEN more connections are started, and someone tries to drop it again or the primary
        let next = (0..<3).compactMap { _ in sources.assign() }

        let secondDrop = sources.drop(1, reason: "again")
        let primaryDrop = sources.drop(SegmentSources.primary, reason: "never")

        // THEN they all go to the primary, the second drop is not news, and the primary stays
        #expect(next.allSatisfy { $0.source == SegmentSources.primary })
        #expect(!secondDrop)
        #expect(sources.standing(of: 1) == .dropped("its bytes differ"))
        #expect(!primaryDrop)
        #expect(!sources.isDropped(SegmentSources.primary))
    }

    @Test func aMirrorIsDroppedAfterFailuresInARowButADeliveredSegmentForgivesThem() {
        // GIVEN an admitted mirror
        var sources = SegmentSources(primaryValidators: primaryValidators, mirrorCount: 1)
        _ = sources.assign()
        sources.admit(1, validators: mirrorValidators)

        // WHEN it fails, delivers a segment, then fails twice (and the primary fails twice)
        let first = sources.failed(1, reason: "cut")
        sources.delivered(1)
        let second = sources.failed(1, reason: "cut")
        let third = sources.failed(1, reason: "cut again")
        let primaryFailures = [sources.failed(SegmentSources.primary, reason: "x"), sources.failed(SegmentSources.primary, reason: "x")]

        // THEN only the second failure in a row drops it (the primary's failures never do)
        #expect(!first && !second && third)
        #expect(sources.isDropped(1))
        #expect(primaryFailures == [false, false])
        #expect(!sources.isDropped(SegmentSources.primary))
    }

    @Test func anAbandonedProbeLeavesTheMirrorUnproven() {
        // GIVEN a mirror being probed
        var sources = SegmentSources(primaryValidators: primaryValidators, mirrorCount: 1)
        let probe = sources.assign()

        // WHEN its connection ends without a verdict (the download stops)
        if let probe { sources.release(probe) }
        let standing = sources.standing(of: 1)
        let next = sources.assign()

        // THEN it is unproven again, and the next connection given to it probes it
        #expect(probe == .probe(source: 1))
        #expect(standing == .unproven)
        #expect(next == .probe(source: 1))
    }

    @Test func aConnectionThatOnlyAwaitedAProbeLeavesItToItsProber() {
        // GIVEN a mirror being probed by one connection and awaited by another (the primary has one
        // connection already, so the first two new ones both go to the mirror)
        var sources = SegmentSources(primaryValidators: primaryValidators, mirrorCount: 1)
        let probe = sources.assign()
        _ = sources.assign()
        let waiter = sources.assign()

        // WHEN the waiting connection ends (it found no work) before the probe's verdict
        #expect(probe == .probe(source: 1))
        #expect(waiter == .awaitProbe(source: 1))
        if let waiter { sources.release(waiter) }

        // THEN the mirror is still being probed: no other connection probes it a second time
        #expect(sources.standing(of: 1) == .probing)
        #expect(sources.assign() == .awaitProbe(source: 1))
    }

    @Test func aSourceWithoutAFreeHostSlotIsSkipped() {
        // GIVEN two mirrors, the first on a host with no free slot
        var sources = SegmentSources(primaryValidators: primaryValidators, mirrorCount: 2)

        // WHEN a connection is assigned without it, then without any source at all
        let assignment = sources.assign(excluding: [1])
        let none = sources.assign(excluding: [0, 1, 2])

        // THEN it goes to the other mirror, and with every source excluded there is none
        #expect(assignment == .probe(source: 2))
        #expect(none == nil)
    }
}
