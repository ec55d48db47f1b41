import HaulStore
import Testing

@testable import Haul

/// A heartbeat that misses a lease whose settlement is being committed must not take it for lost.
@Suite("HeldLeases: a lease being settled is not lost")
struct HeldLeasesSettlingTests {
    static let lease = Lease(item: 7, owner: LeaseOwner(), epoch: 3)

    @Test(
        "GIVEN a held lease whose settlement is being committed WHEN a renewal that read the store after the commit misses it THEN it is not lost, and once let go it is no longer held"
    )
    func aLeaseBeingSettledIsNotLost() {
        let leases = HeldLeases()
        leases.claimed(Self.lease)
        leases.settling([Self.lease])

        #expect(!leases.lose(Self.lease))
        #expect(!leases.isLost(Self.lease.item))
        leases.letGo([Self.lease])
        #expect(leases.held.isEmpty)
        #expect(!leases.lose(Self.lease))
    }

    @Test("GIVEN a held lease whose settlement failed to commit WHEN a renewal misses it THEN it is lost, as any held lease")
    func aLeaseWhoseSettlementFailedCanBeLost() {
        let leases = HeldLeases()
        leases.claimed(Self.lease)
        leases.settling([Self.lease])
        leases.settlingFailed([Self.lease])

        #expect(leases.lose(Self.lease))
        #expect(leases.isLost(Self.lease.item))
    }
}
