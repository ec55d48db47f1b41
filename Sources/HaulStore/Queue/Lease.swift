/// A lease on a queue item, from its claim to its settlement: the item, the process that holds
/// it, and the epoch of the claim. Every write of the transfer the claim started (progress, the
/// resume record, the settlement) names it, and the store refuses it once the item was leased
/// again (a new epoch) or is no longer the owner's.
package struct Lease: Sendable, Hashable {
    /// The item's id.
    package let item: Int64
    /// Who holds it.
    package let owner: LeaseOwner
    /// The epoch of the claim that took it.
    package let epoch: Int64

    package init(item: Int64, owner: LeaseOwner, epoch: Int64) {
        self.item = item
        self.owner = owner
        self.epoch = epoch
    }
}

extension StoredDownload {
    /// The item's lease as the row was read (a claim returns the row it leased): nil when no one
    /// holds it.
    package var lease: Lease? {
        leaseOwner.map { Lease(item: id, owner: $0, epoch: leaseEpoch) }
    }

    /// The lease `owner` took on this item, as its claim returned it.
    package func lease(for owner: LeaseOwner) -> Lease {
        Lease(item: id, owner: owner, epoch: leaseEpoch)
    }
}
