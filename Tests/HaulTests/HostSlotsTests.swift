import Testing

@testable import Haul

@Suite("HostSlots: the per-host connection limit")
struct HostSlotsTests {
    @Test func refusesBeyondTheLimitPerHostAndFreesOnRelease() {
        // GIVEN a limit of 3 connections per host
        let slots = HostSlots(limit: 3)
        // WHEN a host takes three THEN a fourth is refused, while another host is unaffected
        #expect((0..<3).allSatisfy { _ in slots.acquire("a.test") })
        #expect(!slots.acquire("a.test"))
        #expect(slots.acquire("b.test"))
        // WHEN one is released THEN one more fits
        slots.release("a.test")
        #expect(slots.acquire("a.test"))
        #expect(!slots.acquire("a.test"))
    }
}
